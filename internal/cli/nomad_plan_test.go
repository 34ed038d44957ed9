package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
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

// --dry-run --json is the plan as data: one object per volume, its action, what an update
// would change, what would stop it (exit 4 all the same), and why a volume could not be
// planned (exit 1); --json without --dry-run is a usage error, nothing registered. Before,
// register had no --json, and a script had to read the plan's sentences.
func TestNomadRegisterDryRunJSONIsThePlan(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "other", Name: "other", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.vols["default/other"] = true
	a.sent["default/other"] = map[string]any{"ExternalID": "someone-elses-disk", "PluginID": "hp"}
	a.mu.Unlock()
	plan := func(ids ...string) ([]NomadRegisterPlan, error) {
		t.Helper()
		ios, _, out, _ := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: ids, DryRun: true, Exporter: exportFlags{JSON: true}})
		var plans []NomadRegisterPlan
		if jerr := json.Unmarshal(out.Bytes(), &plans); jerr != nil {
			t.Fatalf("register --dry-run --json %v: %v\n%s", ids, jerr, out)
		}
		return plans, err
	}
	plans, err := plan("db", "other", "nosuch")
	if ExitCode(err) != ExitConflict {
		t.Errorf("plan of db, other (another volume in Nomad) and nosuch: %v (exit %d), want exit 4", err, ExitCode(err))
	}
	if len(plans) != 3 {
		t.Fatalf("plans %+v, want one per volume", plans)
	}
	if p := plans[0]; p.ID != "db" || p.Action != "register" || p.NomadNamespace != "default" || len(p.WouldFail) != 0 || p.Error != "" {
		t.Errorf("plan of db: %+v, want a registration in namespace default", p)
	}
	if p := plans[1]; p.ID != "other" || p.Action != "another" || !slices.Contains(p.WouldFail, "Nomad's volume of the ID is another one") {
		t.Errorf("plan of other: %+v, want it another one, which would stop the registration", p)
	}
	if p := plans[2]; p.ID != "nosuch" || p.Action != "" || !strings.Contains(p.Error, `"nosuch"`) {
		t.Errorf("plan of nosuch: %+v, want the error naming it", p)
	}
	if plans, err := plan("db"); err != nil || len(plans) != 1 || plans[0].Action != "register" {
		t.Errorf("plan of db alone: %+v, %v (exit %d), want exit 0", plans, err, ExitCode(err))
	}
	ios, _, _, _ := iostreams.Test()
	err = nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, Exporter: exportFlags{JSON: true}})
	if ExitCode(err) != ExitUsage || handedOver(t, h) || a.has("default", "db") {
		t.Errorf("register --json without --dry-run: %v (exit %d), want a usage error and nothing registered", err, ExitCode(err))
	}
}

// A volume Nomad has already that volctl did not hand over (registered there first, with
// secrets volctl's copy lacks): Nomad does not show a copy's secrets, and its update takes the
// secrets sent, none included (Nomad 2.0.5 then sent the plugin's ControllerValidateVolume
// none). The plan and the registration say so, and what to do; not for a volume volctl handed
// over itself. Before: "nothing would change (secrets are not compared)", then "Updated", and
// Nomad's secrets were gone.
func TestNomadRegisterSaysNomadsSecretsWouldBeReplaced(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil { // Nomad's copy, as if registered there first
		t.Fatal(err)
	}
	if _, err := runNomadRelease(h, a.client, func(o *NomadReleaseOptions) { o.Force = true }); err != nil {
		t.Fatal(err)
	}
	const note = `Note: volume "db" is registered in Nomad already, not handed over by volctl, and Nomad does not show its copy's secrets`
	ios, _, out, errOut := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, DryRun: true}); err != nil {
		t.Fatalf("--dry-run: %v", err)
	}
	if !strings.Contains(errOut.String(), note) || !strings.Contains(errOut.String(), "volctl volume register FILE") {
		t.Errorf("--dry-run of a volume Nomad has already, without secrets here: out %q, stderr %q\nwant it to say %q", out, errOut, note)
	}
	_, errs, err := registerIn(h, a)
	if err != nil || !strings.Contains(errs, "the registration replaced them with volctl's, which are none") || !strings.Contains(errs, "`volctl nomad register db` again") {
		t.Errorf("registration of a volume Nomad has already, without secrets here: %v, stderr %q; want it to say Nomad's secrets were replaced", err, errs)
	}
	// Handed over by volctl: Nomad's copy's secrets are volctl's.
	ios, _, _, errOut = iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, DryRun: true}); err != nil || strings.Contains(errOut.String(), "secrets") {
		t.Errorf("--dry-run of a volume volctl handed over: %v, stderr %q; want no word of Nomad's secrets", err, errOut)
	}
}
