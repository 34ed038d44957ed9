package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// `volctl nomad register --dry-run` is the plan a script or CI gates a handover on: it fails
// (exit 4) wherever the registration would not go through, naming the volume and why, and
// exits 0 where it would. Before, it said "it would be refused" and exited 0 all the same, so
// a CI step running it passed, and the handover it gated then failed.
func TestNomadRegisterDryRunFailsWhereTheRegistrationWould(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	dryRun := func() (string, error) {
		t.Helper()
		ios, _, out, _ := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, DryRun: true})
		return out.String(), err
	}

	// A live local claim: refused without --force.
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"}); err != nil {
		t.Fatal(err)
	}
	out, err := dryRun()
	if ExitCode(err) != ExitConflict || err == nil || !strings.Contains(err.Error(), `volume "db"`) || !strings.Contains(err.Error(), "live local claims") {
		t.Errorf("--dry-run of a volume with a live local claim: %v (exit %d), out %q; want exit 4 naming the volume and its claims", err, ExitCode(err), out)
	}
	if _, _, err := registerIn(h, a); ExitCode(err) != ExitConflict {
		t.Fatalf("the registration the dry run gated: %v (exit %d), want exit 4", err, ExitCode(err))
	}
	if _, err := h.e.Release(h.ctx, "db", "local-0"); err != nil {
		t.Fatal(err)
	}
	if out, err := dryRun(); err != nil || !strings.Contains(out, `Would register volume "db"`) {
		t.Fatalf("--dry-run of a volume that would go through: %q, %v (exit %d), want exit 0", out, err, ExitCode(err))
	}

	// Another volume by the ID in Nomad: refused.
	a.mu.Lock()
	a.vols["default/db"] = true
	a.sent["default/db"] = map[string]any{"ExternalID": "someone-elses-disk", "PluginID": "hp"}
	a.mu.Unlock()
	out, err = dryRun()
	if ExitCode(err) != ExitConflict || err == nil || !strings.Contains(err.Error(), "another one") {
		t.Errorf("--dry-run over another volume of the ID: %v (exit %d), out %q; want exit 4 saying Nomad's is another one", err, ExitCode(err), out)
	}
	if _, _, err := registerIn(h, a); ExitCode(err) != ExitConflict {
		t.Errorf("the registration the dry run gated: %v (exit %d), want exit 4", err, ExitCode(err))
	}
	if handedOver(t, h) {
		t.Error("a dry run or a refused registration left the volume marked")
	}
}
