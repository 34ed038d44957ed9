package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// A mark an older volctl recorded with a key-only NOMAD_ADDR (http://KEY@host: the old
// client recorded the address with the key), the key since moved to NOMAD_HTTP_AUTH or
// rotated: nomad status's note quoted the mark's address, key and all; it shows it as
// every address is shown (engine.ShownNomadAddress).
func TestNomadStatusNoteOfAnOldMarkShowsNoKey(t *testing.T) {
	const key = "k3y-0f-the-gateway-7781"
	h := nomadHarness(t)
	n := newFakeNomad(t)
	old := strings.Replace(n.srv.URL, "http://", "http://"+key+"@", 1)
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: old}, false,
		func(context.Context, bool, engine.VolumeInfo) (engine.Registered, error) {
			return engine.Registered{InFlight: true}, nil
		}); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client}); err != nil {
		t.Fatalf("nomad status: %v", err)
	}
	if s := out.String() + errOut.String(); strings.Contains(s, key) {
		t.Errorf("nomad status shows the key of an old mark:\n%s", s)
	}
}

// The same old mark, asked about with NOMAD_ADDR at another cluster: the advice to run
// `NOMAD_ADDR=<mark's address> volctl nomad status db` shows no key, and says to put the
// credential back in place of xxxxx (pasted as written, it sent the literal xxxxx as the user).
func TestNomadStatusAdviceOfAnOldMarkSaysToPutTheCredentialBack(t *testing.T) {
	const key = "k3y-0f-the-gateway-7781"
	h := nomadHarness(t)
	a, b := newFakeNomad(t), newFakeNomad(t)
	old := strings.Replace(a.srv.URL, "http://", "http://"+key+"@", 1)
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: old}, false,
		func(context.Context, bool, engine.VolumeInfo) (engine.Registered, error) {
			return engine.Registered{Index: 5}, nil
		}); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := iostreams.Test()
	err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: b.client})
	s := out.String() + errOut.String()
	if err != nil {
		s += err.Error()
	}
	if strings.Contains(s, key) {
		t.Errorf("nomad status shows the key of an old mark:\n%s", s)
	}
	if !strings.Contains(s, "NOMAD_ADDR=http://xxxxx@") || !strings.Contains(s, "in place of xxxxx") {
		t.Errorf("advice does not say to put the credential back:\n%s", s)
	}
	_, rerr := runNomadRelease(h, b.client, nil)
	if rerr == nil || strings.Contains(rerr.Error(), key) || !strings.Contains(rerr.Error(), "in place of xxxxx") {
		t.Errorf("release at another address: %v", rerr)
	}
}
