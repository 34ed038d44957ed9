package engine

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// steppedClock is an engine clock a test moves forward.
type steppedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *steppedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *steppedClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// A nightly script runs `snapshot create db nightly` each night against a plugin that gives no
// creation_time. The second night the plugin answers with the first night's snapshot, and the
// create rightly says Unchanged ("exists already, nothing new was taken"), but the record was
// rewritten with tonight's time (store.Put records a missing time as the time of the record):
// `snapshot list` then dated the first night's snapshot tonight, every night, so a retention
// job pruning by age never found it old, and a user reading the list believed a fresh snapshot
// was taken. The snapshot taken then keeps the time it was recorded with. Found by helper
// review63.
func TestUnchangedSnapshotOfAnUndatedPluginKeepsItsRecordedTime(t *testing.T) {
	t.Parallel()
	clock := &steppedClock{t: snapshotClock}
	h := newHarness(t, nil)
	h.open(Config{Now: clock.now})
	db := h.create(volume("db"))
	// The plugin's snapshot under the NAME, which it dates not at all.
	h.mem.AddSnapshot(csi.Snapshot{ID: "nightly", SourceVolumeID: db.ExternalID, SizeBytes: 1 << 20, ReadyToUse: true})

	first, outcome, err := h.e.CreateSnapshotOutcome(h.ctx, "db", "nightly", nil)
	if err != nil || outcome != Created {
		t.Fatalf("first night: %+v, %v, %v; want Created", first, outcome, err)
	}
	if !first.CreatedAt.Equal(snapshotClock) {
		t.Fatalf("first night's snapshot recorded at %v, want %v (the time of the record)", first.CreatedAt, snapshotClock)
	}

	clock.add(24 * time.Hour)
	again, outcome, err := h.e.CreateSnapshotOutcome(h.ctx, "db", "nightly", nil)
	if err != nil || outcome != Unchanged || again.ID != first.ID {
		t.Fatalf("second night: %+v, %v, %v; want %q Unchanged", again, outcome, err, first.ID)
	}
	if !again.CreatedAt.Equal(snapshotClock) {
		t.Errorf("second night's create, Unchanged, answers the snapshot taken at %v; want %v, when it was taken", again.CreatedAt, snapshotClock)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Snapshots {
		if s.ID == "nightly" && !s.CreatedAt.Equal(snapshotClock) {
			t.Errorf("snapshot list after the second night dates the first night's snapshot %v; want %v (nothing new was taken)", s.CreatedAt, snapshotClock)
		}
	}
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range recs {
		if s.ID == "nightly" && !s.CreatedAt.Equal(snapshotClock) {
			t.Errorf("record after the second night dates the first night's snapshot %v; want %v", s.CreatedAt, snapshotClock)
		}
	}
}

// A snapshot outlives its source (deregistered), and the source's volctl ID is registered again
// for other storage, with another tenant's secrets. `snapshot list` rightly shows the
// snapshot's source as "db (gone)" (markSourcesGone: no volume of volctl's holds that storage
// now). But `snapshot delete` without --secret took the new "db"'s secrets for "the volume
// still known" (deleteSnapshotStored compared the plugin alone, not the storage), and sent
// them with DeleteSnapshot of the old volume's snapshot: another volume's credentials handed to
// the plugin for storage they are not for, where the snapshot's recorded secrets were due (the
// doc: "the recorded secrets are sent, unless --secret is given or the volume is still known").
// Found by helper review63.
func TestSnapshotDeleteAfterItsSourceIDWasReusedSendsTheRecordedSecrets(t *testing.T) {
	t.Parallel()
	h, sn := nightlySnapshot(t) // of "db", secrets token=s3cr3t
	if _, err := h.e.DeregisterVolume(h.ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	h.mem.AddVolume(csi.Volume{ID: "ext-other", CapacityBytes: 1 << 20})
	sv := regSpec("db", 0)
	sv.PluginID, sv.ExternalID, sv.Secrets = "mem", "ext-other", spec.Secrets{"token": "tenant-b"}
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Snapshots {
		if s.ID == sn.ID && !s.SourceGone {
			t.Fatalf("snapshot list does not show %q's source gone: %+v", sn.ID, s)
		}
	}
	h.mem.ResetCalls()
	if _, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", sn.ID, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.mem.Calls() {
		if c.RPC != csi.RPCDeleteSnapshot {
			continue
		}
		req := c.Request.(csi.DeleteSnapshotRequest)
		if got := req.Secrets["token"]; got != "s3cr3t" {
			t.Errorf("DeleteSnapshot of %q (a snapshot of the old db's storage) sent token %q, the new db's (other storage); want %q, the secrets it was made with",
				sn.ID, got, "s3cr3t")
		}
	}
}

// `snapshot create db nightly` each night, through a plugin whose IDs are not the name alone
// (a generation, a random part). The first night's snapshot is removed with the storage's own
// tools; the next night the plugin, holding nothing under "nightly", takes a new snapshot under
// a new ID, and volctl recorded it beside the first one's record, under the same NAME: two
// records named "nightly" (recordNamed's "a plugin's snapshot names are unique" no longer
// held; the derived-name path checks NameTaken, a given NAME did not). Every command that
// takes a NAME then picked the record first by snapshot ID: `snapshot delete mem nightly`
// "deleted" the first night's snapshot, long gone, exit 0, and the live one stayed; a restore
// with snapshot_id = "nightly" was told to write the gone snapshot's ID. The first one's record
// is forgotten now, with an event naming it. Found by helper review63.
func TestSnapshotNameReusedAfterItsSnapshotWentLeavesOneRecordPerName(t *testing.T) {
	t.Parallel()
	h, first := nightlySnapshot(t)
	h.mem.DropSnapshot(first.ID) // deleted with the storage's own tools
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "b-" })
	second, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.ID == first.ID {
		t.Fatalf("the second night's snapshot has the first's ID %q: the test needs them apart", first.ID)
	}
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, r := range recs {
		if r.Name == "nightly" {
			named = append(named, r.ID)
		}
	}
	if len(named) > 1 {
		t.Errorf("records named %q after the second night: %q; want one (NAMEs pick a snapshot: snapshot delete, deregister, a restore's snapshot_id advice)", "nightly", named)
	}

	// A restore given the NAME is told which ID to write: the live one's.
	rv := volume("restored")
	rv.SnapshotID = "nightly"
	if _, err := h.e.CreateVolume(h.ctx, rv); err == nil || !strings.Contains(err.Error(), strconv.Quote(second.ID)) {
		t.Errorf("restore with snapshot_id = %q: %v; want it refused naming the ID of the snapshot the plugin holds under that name, %q", "nightly", err, second.ID)
	}

	// The delete by NAME deletes the snapshot the plugin holds under it.
	if _, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightly", nil); err != nil {
		t.Fatalf("snapshot delete mem nightly: %v", err)
	}
	for _, s := range h.mem.Snapshots() {
		if s.ID == second.ID {
			t.Errorf("snapshot delete mem nightly answered OK, but the plugin still holds %q, the snapshot taken under that name (it deleted the record of %q, long gone)", second.ID, first.ID)
		}
	}
}
