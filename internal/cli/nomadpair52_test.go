package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/store"
)

// recordTwice records volume db's storage again as volume db2 through plugin mate, registered on
// plugin's socket, as an older volctl may have left them (then more, when not nil), in one
// transaction.
func recordTwice(t *testing.T, h *cliHarness, plugin, mate string, more func(tx *store.Tx) error) {
	t.Helper()
	updateStore(t, h, func(tx *store.Tx) error {
		p, err := tx.Plugins().Get(plugin)
		if err != nil {
			return err
		}
		db, err := tx.Volumes().Get("db")
		if err != nil {
			return err
		}
		m := store.Plugin{ID: mate, Type: p.Type, Socket: p.Socket, ControllerSocket: p.ControllerSocket, NodeSocket: p.NodeSocket}
		if err := tx.Plugins().Put(&m); err != nil {
			return err
		}
		db2 := db
		db2.ID, db2.Name, db2.PluginID = "db2", "db2", mate
		if err := tx.Volumes().Insert(&db2); err != nil || more == nil {
			return err
		}
		return more(tx)
	})
}

// Volume db's storage recorded again as db2 through plugin hp2, registered on hp's socket (an
// older volctl's pair), and db2 staged on this node: nomad register of db is refused, as a
// claim of it is (Nomad's claims would ignore db2's), and its --dry-run says so with the same
// exit, where it said "Would register".
func TestNomadRegisterDryRunOfAVolumeWhoseStorageAnotherRecordHolds(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	recordTwice(t, h, "hp", "hp2", func(tx *store.Tx) error {
		return tx.Stagings().Put(&store.Staging{VolumeID: "db2", PluginID: "hp2", NodeID: "n1", Staged: true, StagingPath: h.state + "/staging/hp2/db2"})
	})
	registerAndPlanRefused(t, h, a, "a volume whose storage another record holds", `volume "db2"`, "volctl volume deregister db2")
	if _, _, err := registerIn(h, a); err == nil || !strings.Contains(err.Error(), `records the storage of volume "db2" too`) {
		t.Errorf("register of db: %v, want it to say db2 records its storage", err)
	}
	// volume status says it, as text and as JSON.
	ios, _, out, _ := iostreams.Test()
	if err := volumeStatusRun(h.ctx, &VolumeStatusOptions{IO: ios, Engine: h.engine, Now: time.Now, ID: "db"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Same Storage", "db2 (plugin hp2) records this storage too", "`volctl volume deregister db`"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("volume status db lacks %q:\n%s", want, out)
		}
	}
	ios, _, out, _ = iostreams.Test()
	if err := volumeStatusRun(h.ctx, &VolumeStatusOptions{IO: ios, Engine: h.engine, Now: time.Now, ID: "db", Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"same_storage": [`) || !strings.Contains(out.String(), `"db2 (plugin hp2)"`) {
		t.Errorf("volume status db --json lacks same_storage:\n%s", out)
	}
}

// The same pair exported (export nomad --all): each volume's file is written, with a note that
// the other records its storage too, so that the two are not both registered in Nomad unseen
// (nomad register refuses a handover while the other is held; a file is registered by hand).
func TestExportNomadNotesOneStorageRecordedTwice(t *testing.T) {
	h := newCLIHarness(t)
	exportVolume(t, h)
	recordTwice(t, h, "mem", "mem2", nil)
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.All, o.NoPluginJob = true, true })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`Note: volume "db": db2 (plugin mem2) records its storage too`, `Note: volume "db2": db (plugin mem) records its storage too`, "`volctl volume deregister db2` first"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("export --all of the pair: stderr lacks %q:\n%s", want, stderr)
		}
	}
}
