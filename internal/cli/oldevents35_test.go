package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
)

// A handover an older volctl made recorded its event with the address as that version showed
// it (here a lower-case secret in the path and a query key, which round 34 showed): `volctl
// events` and its --json printed it as written. They show it as every address is shown now.
func TestEventsOfAnOldHandoverShowNoAddressSecret(t *testing.T) {
	const secret = "opensesame"
	h := nomadHarness(t)
	n := newFakeNomad(t)
	old := n.srv.URL + "/" + secret + "/?" + secret + "="
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: old}, false,
		func(context.Context, bool, engine.VolumeInfo) (engine.Registered, error) {
			return engine.Registered{Index: 5}, nil
		}); err != nil {
		t.Fatal(err)
	}
	for _, json := range []bool{false, true} {
		ios, _, out, errOut := iostreams.Test()
		if err := eventsRun(h.ctx, &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Exporter: exportFlags{JSON: json}}); err != nil {
			t.Fatalf("events (json %v): %v", json, err)
		}
		s := out.String() + errOut.String()
		if strings.Contains(s, secret) || !strings.Contains(s, "handed over to Nomad at "+n.srv.URL+"/xxxxx/?xxxxx") {
			t.Errorf("events (json %v) shows an old handover's address otherwise than %s/xxxxx/?xxxxx:\n%s", json, n.srv.URL, s)
		}
	}
}

// A lower-case secret in NOMAD_ADDR's path and as a query key (round 34 showed it as a plain
// word): a handover through it records the address without it, in the mark and the event, and
// says it nowhere; the volume is handed over to the host written.
func TestNomadRegisterThroughALowerCaseSecretRecordsNone(t *testing.T) {
	const secret = "opensesame"
	h := nomadHarness(t)
	n := newFakeNomad(t)
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	client := func() (*nomad.Client, error) { return nomad.NewClient(n.srv.URL + "/" + secret + "/?" + secret + "=") }
	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(h.ctx, &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"db"}})
	if err != nil || !n.has("default", "db") {
		t.Fatalf("register: %v\n%s%s", err, out, errOut)
	}
	if s := out.String() + errOut.String(); strings.Contains(s, secret) || !strings.Contains(s, n.srv.URL+"/xxxxx/?xxxxx") {
		t.Errorf("register says the address otherwise than %s/xxxxx/?xxxxx:\n%s", n.srv.URL, s)
	}
	files, _ := filepath.Glob(filepath.Join(h.state, "*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the address's secret", f)
		}
	}
}
