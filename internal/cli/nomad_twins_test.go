package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// Nomad has volume db's storage (plugin hp, its external ID) registered as volume db of
// namespace team (`nomad volume register -namespace team` of the file volctl export nomad
// wrote). volctl nomad register db registered it in the default namespace too, exit 0: two
// Nomad volumes of one storage, whose allocs Nomad lets write it at once. Now the registration
// is refused, exit 4, naming both, nothing sent and the volume not marked; --dry-run says it
// would be refused (exit 4, its would_fail in --json).
func TestNomadRegisterRefusesAVolumeWhoseStorageNomadHasInAnotherNamespace(t *testing.T) {
	h := nomadHarness(t)
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	n.take("team", "db")
	n.mu.Lock()
	n.sent["team/db"] = map[string]any{"ExternalID": info.ExternalID, "PluginID": "hp"}
	n.mu.Unlock()

	ios, _, out, _ := iostreams.Test()
	err = nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true,
		Exporter: exportFlags{JSON: true}})
	if ExitCode(err) != ExitConflict {
		t.Errorf("register --dry-run --json: %v (exit %d), want exit 4", err, ExitCode(err))
	}
	var plans []NomadRegisterPlan
	if jerr := json.Unmarshal(out.Bytes(), &plans); jerr != nil || len(plans) != 1 || len(plans[0].WouldFail) == 0 ||
		!strings.Contains(strings.Join(plans[0].WouldFail, "; "), "storage") {
		t.Errorf("register --dry-run --json: %s (%v)\nwant one plan whose would_fail says Nomad has its storage as another volume", out, jerr)
	}

	_, _, err = registerIn(h, n)
	if ExitCode(err) != ExitConflict {
		t.Errorf("register: %v (exit %d), want exit 4", err, ExitCode(err))
	}
	saysAll(t, "register", err, `volume "db" in namespace team`, `external ID "`+info.ExternalID+`"`, "nomad volume deregister -namespace team db")
	if n.has("default", "db") {
		t.Errorf("registered in namespace default beside team's volume of the same storage")
	}
	n.mu.Lock()
	if len(n.puts) != 0 {
		t.Errorf("registrations sent: %v", n.puts)
	}
	n.mu.Unlock()
	if handedOver(t, h) {
		t.Errorf("volume db still marked handed over after a registration refused before anything was sent")
	}
}

// register --all (and its --dry-run) over many volumes asked Nomad for the list of every
// volume of every namespace once per volume, to look for twins: on a cluster of thousands of
// volumes, a handover of hundreds fetched the whole list hundreds of times. It is listed once
// per command now, and what the command registers is compared with the volumes after it.
func TestNomadRegisterAllListsNomadsVolumesOnce(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 4)
	n := newFakeNomad(t)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, All: true, DryRun: true, Nomad: n.client}); err != nil {
		t.Fatalf("register --all --dry-run: %v", err)
	}
	if got := n.lists.Load(); got != 1 {
		t.Errorf("register --all --dry-run of %d volumes listed Nomad's volumes %d times, want once", len(ids), got)
	}
	n.lists.Store(0)
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, All: true, Nomad: n.client}); err != nil {
		t.Fatalf("register --all: %v", err)
	}
	if got := n.lists.Load(); got != 1 {
		t.Errorf("register --all of %d volumes listed Nomad's volumes %d times, want once", len(ids), got)
	}
	if got := marked(t, h, ids); len(got) != len(ids) {
		t.Errorf("volumes handed over: %v, want all of %v", got, ids)
	}
}
