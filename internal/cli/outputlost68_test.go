package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// runWithStdout runs volctl with args on engine e, as main does, its stdout the file out (a
// full disk, a pipe whose reader is gone), and returns the exit status and stderr.
func runWithStdout(ctx context.Context, e *engine.Engine, out *os.File, args ...string) (int, string) {
	var errOut bytes.Buffer
	ios := &iostreams.IOStreams{In: strings.NewReader(""), Out: &iostreams.Stdout{File: out}, ErrOut: &errOut}
	return runWith(ctx, e, ios, args...), errOut.String()
}

// A forced detach of a volume with no claims left, which sends the ControllerUnpublishVolume
// an earlier forced detach owed (DetachResult.DetachedFrom), detaches the volume from its node.
// Its result lost (stdout on a full disk, a reader gone), the error must say what was done
// (docs/json.md, architecture.md: "exit 1, the error saying what was done"): it said only
// `volume "v": 0 claim(s) released; only printing it failed`, which a script's log reads as
// a detach that did nothing, while the volume was detached from the node. The same with
// --json and with the text line `Detached volume "v" from node "n"`. Found by helper review68.
func TestForcedDetachResultLostSaysItDetachedFromTheNode(t *testing.T) {
	requireMount(t)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer full.Close()
	for _, form := range [][]string{nil, {"--json"}} {
		t.Run(fmt.Sprintf("%v", form), func(t *testing.T) {
			ctx := context.Background()
			_, e, info := volumeWithAnOwedDetach(t)
			code, errOut := runWithStdout(ctx, e, full, append([]string{"volume", "detach", "v", "--force", "--yes"}, form...)...)
			after, err := e.Volume(ctx, "v")
			if err != nil || after.AttachedTo != "" {
				t.Fatalf("premise: the second forced detach detached the volume: %+v, %v", after, err)
			}
			if code != ExitError {
				t.Errorf("forced detach whose result is lost: exit %d, want 1", code)
			}
			if !strings.Contains(errOut, info.AttachedTo) {
				t.Errorf("the forced detach detached volume \"v\" from node %q, its result lost; stderr says only:\n%s\nwant it to say the volume was detached from the node (what was done)", info.AttachedTo, errOut)
			}
		})
	}
}

// `volume detach --json` that waited for the volume while another volctl released one of its
// claims: docs/json.md gives `released_meanwhile` as "the claims the volume had as the detach
// began that another volctl released while it waited for the volume (a release, another
// detach); stderr names them too", and the command's help "Claims another volctl released
// while the detach waited for the volume are named on stderr". With --json (or --jq, -t) the
// command returned before that line: stderr said nothing of them. Found by helper review68.
func TestDetachJSONNamesClaimsReleasedMeanwhileOnStderr(t *testing.T) {
	requireMount(t)
	faults := csitest.NewFaults()
	h := newCLIHarnessServing(t, csitest.WithFaults(faults))
	h.createVolume(t, "db", spec.MultiNodeMultiWriter)
	h.claim(t, "db", "web-0")
	h.claim(t, "db", "web-1")
	other := openEngine(t, h.state) // another volctl on the same state dir

	gate := make(chan struct{})
	faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})
	released := make(chan error, 1)
	go func() { _, err := other.Release(h.ctx, "db", "web-0"); released <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for faults.Held() < 1 {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatal("the other volctl's release never reached the plugin")
		}
		time.Sleep(time.Millisecond)
	}
	waiting := make(chan struct{})
	var once bool
	ctx := engine.WithProgress(h.ctx, func(step string) {
		if strings.HasPrefix(step, "waiting for the lock on ") && !once {
			once = true
			close(waiting)
		}
	})
	ios, _, out, errOut := iostreams.Test()
	detached := make(chan error, 1)
	go func() {
		detached <- volumeDetachRun(ctx, &VolumeDetachOptions{IO: ios, Engine: h.engine, VolumeID: "db", Yes: true, Confirm: func(bool, string) error { return nil },
			Exporter: exportFlags{JSON: true}})
	}()
	select {
	case <-waiting:
	case err := <-detached:
		close(gate)
		<-released
		t.Fatalf("premise: the detach returned before waiting for the release: %v", err)
	case <-time.After(30 * time.Second):
		close(gate)
		t.Fatal("the detach neither waited for the volume nor returned")
	}
	close(gate)
	if err := <-released; err != nil {
		t.Fatalf("the other volctl's release: %v", err)
	}
	if err := <-detached; err != nil {
		t.Fatalf("detach: %v", err)
	}
	var res engine.DetachResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not the detach's JSON: %v\n%s", err, out)
	}
	if len(res.ReleasedMeanwhile) != 1 || res.ReleasedMeanwhile[0].Alloc != "web-0" {
		t.Fatalf("premise: web-0 released meanwhile: %s", out)
	}
	if !strings.Contains(errOut.String(), "web-0") {
		t.Errorf("detach --json: released_meanwhile names web-0, and stderr says nothing of it:\n%q\nwant stderr to name the claims another volctl released meanwhile, as docs/json.md and the help say", errOut.String())
	}
}

// docs/specs.md: a secret value that is part of a volume's ID "masks that name everywhere,
// the volume listed as [REDACTED]"; docs/json.md: "Secrets and mount flags never appear".
// `group run` and `group status` pass their group through redactOutput, and print the volume
// "[REDACTED]-a"; `group stop` (and `group stop --purge`) printed the claims it released
// (`released`, and its text line "released ...") never scrubbed: the secret whole, in every
// form (--json, --jq, -t, the text). Found by helper review68.
func TestGroupStopMasksASecretInTheReleasedVolumesID(t *testing.T) {
	requireMount(t)
	const secret = "gs68-s3cretword"
	h := newCLIHarness(t)
	id := h.volumeNamedForItsSecret(t, secret, spec.MultiNodeMultiWriter)
	for _, args := range [][]string{
		{"group", "stop", "api", "--json"},
		{"group", "stop", "api", "--jq", ".released[].volume_id"},
		{"group", "stop", "api", "-t", `{{range .released}}{{.volume_id}}{{end}}`},
		{"group", "stop", "api"},
	} {
		h.runGroupOn(t, id)
		code, out, errOut := h.runReported("group", "status", "api", "--json")
		if code != 0 || strings.Contains(out+errOut, secret) || !strings.Contains(out, "[REDACTED]-a") {
			t.Fatalf("premise: group status masks the volume's ID (exit %d):\n%s%s", code, out, errOut)
		}
		code, out, errOut = h.runReported(args...)
		if code != 0 || !strings.Contains(out, "-a") {
			t.Fatalf("volctl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("volctl %s prints the secret the released volume's ID holds, which group run and group status mask:\n%s%s",
				strings.Join(args, " "), out, errOut)
		}
	}
}

// The same for `volume release`: its result (the claim as it ended, its volume_id and
// target_path) was not passed through redactOutput, while `volume status ID` prints the same
// claim with the volume "[REDACTED]-a". (`volume claim` is left alone here: its target path is
// what a script uses, typed by the user's own ID.) Found by helper review68.
func TestReleaseMasksASecretInTheVolumesID(t *testing.T) {
	requireMount(t)
	const secret = "cr68-s3cretword"
	h := newCLIHarness(t)
	id := h.volumeNamedForItsSecret(t, secret, spec.SingleNodeWriter)
	h.claim(t, id, "web-0")
	t.Cleanup(func() { h.e.Release(h.ctx, id, "web-0") })
	code, sOut, sErr := h.runReported("volume", "status", id, "--jq", ".claims[].volume_id")
	if code != 0 || strings.Contains(sOut+sErr, secret) {
		t.Fatalf("premise: volume status ID masks the claim's volume ID (exit %d):\n%s%s", code, sOut, sErr)
	}
	code, out, errOut := h.runReported("volume", "release", id, "--alloc", "web-0", "--json")
	if code != 0 {
		t.Fatalf("release: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, secret) {
		t.Errorf("volume release --json prints the secret the volume's ID holds:\n%s", out)
	}
}

// volumeNamedForItsSecret creates, through plugin mem, volume "<secret>-a" with capability mode
// and secret token = secret: a volume whose ID holds one of its secrets. It returns the ID.
func (h *cliHarness) volumeNamedForItsSecret(t *testing.T, secret string, mode spec.AccessMode) string {
	t.Helper()
	id := secret + "-a"
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: "n-" + id, Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: mode, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	return id
}
