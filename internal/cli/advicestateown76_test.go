package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// Given --state-dir, a refusal whose advice is a volctl command written with an environment
// prefix (`NOMAD_ADDR=... volctl nomad release db`, as HandoverInfo.TakeBackCommands,
// RegisterAgain and askedToTakeBack write it) is left bare: stateDirAdvice rewrites only a
// backticked "`volctl ", and this advice begins "`NOMAD_ADDR=". Pasted, it takes back (or
// hands over, for RegisterAgain) the volume of the same ID in the default state dir, or says
// "not found", while the volume the user meant stays marked handed over. Correct: the volctl
// command inside such advice carries the --state-dir given, as a bare one does.
// Found by helper review76 (own2).
func TestAdviceAfterAnEnvironmentPrefixCarriesTheStateDirGiven(t *testing.T) {
	state, code, errOut := releaseRefusedForAnotherCluster(t, "http://127.0.0.1:4646")
	if code == ExitOK || !strings.Contains(errOut, "but NOMAD_ADDR says") {
		t.Fatalf("nomad release db against another cluster: exit %d, stderr:\n%s\nwant the refusal naming the cluster it was handed to", code, errOut)
	}
	abs, _ := filepath.Abs(state)
	want := "volctl --state-dir " + shellquote.Arg(abs) + " nomad release db"
	if !strings.Contains(errOut, want) {
		t.Errorf("given --state-dir, nomad release refused with:\n%s\nits advice, pasted, takes back the volume db of the default state dir; want it to read %q", errOut, want)
	}
}

// releaseRefusedForAnotherCluster runs `volctl --state-dir STATE nomad release db` of volume db,
// marked handed over to Nomad at address, with NOMAD_ADDR another cluster's: refused, advising
// the release with the setting that names address. It returns the state dir, the exit status
// and stderr.
func releaseRefusedForAnotherCluster(t *testing.T, address string) (state string, code int, errOut string) {
	t.Helper()
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	st, err := store.Open(h.ctx, h.state)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(h.ctx, func(tx *store.Tx) error {
		return tx.Handovers().Put(&store.Handover{VolumeID: "db", Address: address})
	})
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	t.Setenv("NOMAD_ADDR", "http://127.0.0.1:1")
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_NAMESPACE", "")
	t.Setenv("NOMAD_REGION", "")
	ios, _, _, stderr := iostreams.Test()
	f := NewFactory(ios)
	root := NewRootCmd(f)
	root.SetArgs([]string{"--state-dir", h.state, "nomad", "release", "db"})
	code = f.Report(root.Execute())
	_ = f.CloseAtExit()
	return h.state, code, stderr.String()
}

// Given --state-dir, `volctl agent --log-format json` writes its log, one JSON object a line,
// to stderr, which root wraps in stateDirAdvice: a log line whose message advises "`volctl
// reconcile`" got --state-dir and the shell-quoted path inserted raw into the JSON string. A
// state dir holding a `"` (or a `\`, which JSON then reads as an escape: `\b` a backspace) made
// the line invalid JSON, or one saying another path: a log shipper dropped or garbled the very
// lines that advise what to do. Logs are written to stderr as it is (logHandler), text or JSON.
// Found by helper review76 (own2).
func TestAgentJSONLogStaysJSONWithTheStateDirsAdvice(t *testing.T) {
	for _, dir := range []string{`/srv/st"ate`, `/srv/a\b`} {
		for _, asJSON := range []bool{true, false} {
			var stderr bytes.Buffer
			w := withStateDirAdvice(&stderr, dir) // as root's PersistentPreRunE wraps f.IO.ErrOut
			log := slog.New(logHandler(w, asJSON, slog.LevelInfo))
			log.Warn("reconcile: restore claim \"db\": the plugin failed (`volctl reconcile` tries it again)", "volume", "db")
			if strings.Contains(stderr.String(), "--state-dir") {
				t.Errorf("state dir %q, json %v: the log line was rewritten: %s", dir, asJSON, stderr.String())
			}
			if !asJSON {
				continue
			}
			var rec map[string]any
			if err := json.Unmarshal(bytes.TrimSpace(stderr.Bytes()), &rec); err != nil {
				t.Errorf("state dir %q: the agent's JSON log line is no longer JSON (%v):\n%s", dir, err, stderr.String())
			}
		}
	}
	// A setting of the environment before volctl, in single quotes with a blank, and two.
	var buf bytes.Buffer
	w := withStateDirAdvice(&buf, "/s")
	if _, err := w.Write([]byte("run `NOMAD_ADDR='http://a b' NOMAD_REGION=r1 volctl nomad release db`, not `X=1 ls volctl `\n")); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "run `NOMAD_ADDR='http://a b' NOMAD_REGION=r1 volctl --state-dir /s nomad release db`, not `X=1 ls volctl `\n"; got != want {
		t.Errorf("rewritten = %q, want %q", got, want)
	}
}
