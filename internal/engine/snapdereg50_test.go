package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// `volume snapshot deregister PLUGIN NAME` of a snapshot volctl records under that NAME (the
// usage's SNAPSHOT_ID|NAME, `snapshot list`'s NAME column, what `snapshot delete` finds) said
// "volctl has no record of it": only a pending snapshot was found by its NAME. It forgets the
// recorded one, whose ID the event names; the plugin keeps it.
func TestSnapshotDeregisterByNameOfARecordedSnapshot(t *testing.T) {
	t.Parallel()
	h, sn := nightlySnapshot(t)
	warnings, err := h.e.DeregisterSnapshot(h.ctx, "mem", "nightly")
	if err != nil {
		t.Fatalf("deregister of a recorded snapshot by its NAME: %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], sn.ID) {
		t.Errorf("warnings %q, want one naming the snapshot's ID %q, which the plugin keeps", warnings, sn.ID)
	}
	h.update(func(tx *store.Tx) error {
		if _, err := tx.Snapshots().Get("mem", sn.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the record is still there after its deregister (%v)", err)
		}
		return nil
	})
	if evs := h.eventsOf("snapshot-deregister", "db", sn.ID); len(evs) != 1 {
		t.Errorf("deregister events naming %q: %q, want one", sn.ID, evs)
	}
	if n := h.mem.CallCount("DeleteSnapshot"); n != 0 {
		t.Errorf("DeleteSnapshot sent %d times by a deregister", n)
	}
}

// TestSnapshotDeregisteredHereIsSaidToBe: three `snapshot deregister` of one snapshot at once,
// and the two that read after the first's commit said only "volctl has no record of it", as of
// a mistyped ID, with the advice to look in another state dir. They now say what the event log
// last recorded of it, by its ID or its NAME, and are told apart (IsNotFoundHere); a snapshot
// never recorded says nothing of the kind.
func TestSnapshotDeregisteredHereIsSaidToBe(t *testing.T) {
	t.Parallel()
	h, sn := nightlySnapshot(t)
	if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", sn.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{sn.ID, "nightly"} {
		_, err := h.e.DeregisterSnapshot(h.ctx, "mem", id)
		want := `the event log says, just now: snapshot "` + sn.ID + `" (nightly) deregistered`
		if !errors.Is(err, ErrNotFound) || !IsNotFoundHere(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("deregister again by %q: %v, want a not-found saying %q", id, err, want)
		}
	}
	_, err := h.e.DeregisterSnapshot(h.ctx, "mem", "never")
	if !errors.Is(err, ErrNotFound) || IsNotFoundHere(err) || strings.Contains(err.Error(), "event log") {
		t.Errorf("deregister of a snapshot never recorded: %v, want a plain not-found", err)
	}
}

// nightlySnapshot is a harness whose plugin holds volume "db" and its snapshot "nightly",
// recorded under an ID that is not its NAME.
func nightlySnapshot(t *testing.T) (*harness, SnapshotInfo) {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	h.create(volume("db"))
	sn, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sn.ID == "nightly" {
		t.Fatalf("the snapshot's ID is its NAME %q: the test needs them apart", sn.ID)
	}
	return h, sn
}
