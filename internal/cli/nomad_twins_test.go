package cli

import (
	"context"
	"encoding/json"
	"net/http"
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

// Nomad has volume db's storage as volume db of namespace team too (`nomad volume register
// -namespace team` of the exported file, by hand): nomad status showed db registered and said
// nothing of the other, whose allocs Nomad lets write the same storage at once. It warns of it
// now, naming the other and its deregister, and --json carries it as twins; Nomad's volumes are
// listed once for every volume shown.
func TestNomadStatusSaysNomadHasTheStorageAsAnotherVolume(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 3)
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	n.take("team", "db")
	n.mu.Lock()
	n.sent["team/db"] = map[string]any{"ExternalID": info.ExternalID, "PluginID": "hp"}
	n.mu.Unlock()
	n.lists.Store(0)

	ios, _, _, errOut := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client}); err != nil {
		t.Fatalf("status: %v", err)
	}
	for _, want := range []string{`Warning: volume "db": Nomad at ` + n.srv.URL + ` has its storage`, `volume "db" in namespace team`, "nomad volume deregister -namespace team db"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("status stderr:\n%s\nwant it to say %q", errOut, want)
		}
	}
	if got := n.lists.Load(); got != 1 {
		t.Errorf("status of %d volumes listed Nomad's volumes %d times, want once", len(ids), got)
	}

	ios, _, out, _ := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db", "v1"},
		Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatalf("status --json: %v", err)
	}
	var st []struct {
		Registered bool
		Twins      []struct{ ID, Namespace string }
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || len(st) != 2 {
		t.Fatalf("status --json: %s (%v)", out, err)
	}
	if tw := st[0].Twins; len(tw) != 1 || tw[0].ID != "db" || tw[0].Namespace != "team" || !st[0].Registered {
		t.Errorf("status --json of db: twins %+v, registered %v; want db of namespace team, and db registered", tw, st[0].Registered)
	}
	if len(st[1].Twins) != 0 {
		t.Errorf("status --json of v1: twins %+v, want none", st[1].Twins)
	}
}

// A token that may not list volumes (no csi-list-volume): nomad status shows every volume as
// before, and says once, not once per volume, that it could not look for twins.
func TestNomadStatusSaysOnceItCouldNotLookForTwins(t *testing.T) {
	h := nomadHarness(t)
	manyVolumes(t, h, 3)
	n := newFakeNomad(t)
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/volumes" {
			n.lists.Add(1)
			http.Error(w, "Permission denied", http.StatusForbidden)
			return
		}
		inner.ServeHTTP(w, r)
	})
	ios, _, _, errOut := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client}); err != nil {
		t.Fatalf("status with the list refused: %v, want the status shown", err)
	}
	if got := strings.Count(errOut.String(), "could not check"); got != 1 || !strings.Contains(errOut.String(), "csi-list-volume") {
		t.Errorf("status stderr:\n%s\nsays %d times that it could not check for twins, want once, naming csi-list-volume", errOut, got)
	}
	if got := n.lists.Load(); got != 1 {
		t.Errorf("Nomad was asked for the list %d times after refusing it, want once", got)
	}
}

// Nomad answers the list of its volumes with an error other than a 403 (a 500): nomad status
// failed the whole command blaming volume "db", and asked for the list once per volume. Now it
// shows every volume, asks once, and says once, on stderr, which volumes went unchecked; with
// --json too, since no field of its objects says so (as with a 403, which --json kept quiet
// about though docs/json.md promises the note).
func TestNomadStatusNotesOnceThatNomadFailedTheList(t *testing.T) {
	h := nomadHarness(t)
	manyVolumes(t, h, 3)
	n := newFakeNomad(t)
	status := http.StatusInternalServerError
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/volumes" {
			n.lists.Add(1)
			http.Error(w, map[int]string{http.StatusInternalServerError: "rpc error: state store busy", http.StatusForbidden: "Permission denied"}[status], status)
			return
		}
		inner.ServeHTTP(w, r)
	})
	ios, _, _, errOut := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client}); err != nil {
		t.Errorf("status with the list failed: %v, want the status shown", err)
	}
	if got := strings.Count(errOut.String(), "not checked for twins"); got != 1 || !strings.Contains(errOut.String(), `volumes "db", "v1", "v2", "v3": not checked`) ||
		!strings.Contains(errOut.String(), "state store busy") {
		t.Errorf("status stderr:\n%s\nsays %d times that volumes went unchecked, want once, naming db, v1, v2 and v3 and what Nomad said", errOut, got)
	}
	if got := n.lists.Load(); got != 1 {
		t.Errorf("Nomad was asked for the list %d times after failing it, want once", got)
	}
	for _, status = range []int{http.StatusInternalServerError, http.StatusForbidden} {
		ios, _, out, errOut := iostreams.Test()
		if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Exporter: exportFlags{JSON: true}}); err != nil {
			t.Errorf("status --json with the list answered %d: %v, want the status shown", status, err)
		}
		if !json.Valid(out.Bytes()) {
			t.Errorf("status --json with the list answered %d: stdout is not JSON:\n%s", status, out)
		}
		if got := strings.Count(errOut.String(), "Note: "); got != 1 {
			t.Errorf("status --json with the list answered %d: stderr:\n%s\nwant one note saying the twins went unchecked", status, errOut)
		}
	}
}
