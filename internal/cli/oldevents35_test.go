package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
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
