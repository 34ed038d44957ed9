package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestCommitsPerLifecycle pins what a claim and its release cost in the store when each runs in
// a new process (a new Engine that connects to the plugin): how many commits wait for the disk
// and how many do not. docs/architecture.md (Checkpoints) asks for every state change to be
// committed before the next RPC; only the commits a power loss must not undo are durable. A
// change that adds a commit, or makes a progress commit durable, fails here and has to say why.
func TestCommitsPerLifecycle(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name           string
		attach         bool
		restart        bool // the plugin restarts before each operation: a new socket file
		claim, release store.Stats
	}{
		// Claim: its preview, one read of the volume, its plugin and its claims (claimPreview),
		// with which it probes the plugin before admission rather than admitting twice (an
		// admission answering unprobed was a write transaction rolled back, RolledBack 1: a
		// process in the host's mount namespace made that read anyway, for checkMountView);
		// admission, with the intents for what follows (durable); then the staging and
		// the publication (progress). Release: the release request (durable); then the
		// unpublication, and the unstaging with the claim freed (progress). No other reads,
		// and no write rolled back. The plugin has not restarted since its fingerprint was
		// stored, so the new process reuses it and records nothing for it.
		{name: "node only", claim: store.Stats{Reads: 1, DurableWrites: 1, ProgressWrites: 2},
			release: store.Stats{DurableWrites: 1, ProgressWrites: 2}},
		// With a controller, the attach and detach intents ride in the durable admission and
		// release request (a power loss does not undo an attachment on the storage side), and
		// each controller RPC's result is one more progress commit: replaying the RPC from the
		// intent is safe, as CSI makes it idempotent.
		{name: "controller attach", attach: true, claim: store.Stats{Reads: 1, DurableWrites: 1, ProgressWrites: 3},
			release: store.Stats{DurableWrites: 1, ProgressWrites: 3}},
		// A plugin that restarted is fingerprinted again, and the new fingerprint is one more
		// progress commit.
		{name: "node only, plugin restarted", restart: true, claim: store.Stats{Reads: 1, DurableWrites: 1, ProgressWrites: 3},
			release: store.Stats{DurableWrites: 1, ProgressWrites: 3}},
		{name: "controller attach, plugin restarted", attach: true, restart: true,
			claim: store.Stats{Reads: 1, DurableWrites: 1, ProgressWrites: 4}, release: store.Stats{DurableWrites: 1, ProgressWrites: 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) {
				c.Controller.PublishUnpublishVolume = tt.attach
			})
			h.create(volume("db"))
			measure := func(what string, want store.Stats, op func()) {
				t.Helper()
				if tt.restart {
					h.stopServe()
					h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
				}
				h.open(Config{})
				op()
				if got := h.e.store.Stats(); got != want {
					t.Errorf("%s in a new process committed %+v, want %+v", what, got, want)
				}
			}
			measure("claim", tt.claim, func() { h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"}) })
			measure("release", tt.release, func() { h.release("db", "web-0") })
		})
	}
}

// TestCommitsPerRestore pins what a reconcile pass restoring one claim after a reboot costs in
// the store, in a new process. Everything a restore records is node-local: the claim stepped
// back to node-staged and marked degraded, with its lost staging marked unstaged; the staging
// and the claim node-staged again; the claim published, with its events. A power loss that
// undoes any of it undoes the mounts it describes too, and leaves the claim where the next pass
// restores it again (docs/architecture.md, Reconcile / restore), so none of it waits for the
// disk: three progress commits, none durable (a 1,000-claim restore queued its commits behind
// 2,000 fsyncs on the one write connection).
func TestCommitsPerRestore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("db", "web-0", spec.SingleNodeWriter)
	h.open(Config{})
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != "restored" {
		t.Fatalf("reconcile = %+v, %v; want the claim restored", rep, err)
	}
	got := h.e.store.Stats()
	if want := (store.Stats{DurableWrites: 0, ProgressWrites: 3}); got.DurableWrites != want.DurableWrites || got.ProgressWrites != want.ProgressWrites {
		t.Errorf("a pass restoring one claim committed %d durable and %d progress writes, want %d and %d",
			got.DurableWrites, got.ProgressWrites, want.DurableWrites, want.ProgressWrites)
	}
	evs, err := h.e.Events(h.ctx, 100, EventFilter{Kind: "restore", VolumeID: "db"})
	if err != nil || len(evs) != 1 || evs[0].Alloc != "web-0" {
		t.Fatalf("restore events = %+v, %v; want one, for alloc web-0", evs, err)
	}
}

// TestRestoreReadsNothingPerClaim pins that a reconcile pass restoring claims after a reboot
// reads the store in no transaction of its own per claim: the claim, its volume, its staging and
// its plugin's row are read in the restore's first commit, under the volume lock, and the
// stagings of the volumes it restored are not looked at again for cleaning. A pass restoring
// three claims reads as often as one restoring one (a 1,000-claim restore spent a fifth of its
// CPU in those reads: BENCHMARKS.md, Restore).
func TestRestoreReadsNothingPerClaim(t *testing.T) {
	t.Parallel()
	reads := func(n int) store.Stats {
		h := newHarness(t, nil)
		for i := range n {
			h.claimThenReboot(fmt.Sprintf("db%d", i), "web-0", spec.SingleNodeWriter)
		}
		h.open(Config{})
		rep, err := h.e.Reconcile(h.ctx)
		if err != nil || len(rep.Actions) != n {
			t.Fatalf("reconcile = %+v, %v; want %d claims restored", rep, err, n)
		}
		for _, a := range rep.Actions {
			if a.Kind != "restored" {
				t.Fatalf("reconcile did %+v; want only restores", a)
			}
		}
		return h.e.store.Stats()
	}
	one, three := reads(1), reads(3)
	if one.Reads != three.Reads {
		t.Errorf("a pass restoring one claim read the store in %d transactions, one restoring three in %d: want as many, none per claim", one.Reads, three.Reads)
	}
	if three.ProgressWrites != 3*one.ProgressWrites || three.DurableWrites != 0 {
		t.Errorf("restoring three claims committed %+v, one %+v; want three times the progress writes, none durable", three, one)
	}
}

// TestPagesPerLifecycle pins how many pages a claim and its release write to the WAL, each in a
// new process: every page is written by its commit, checkpointed into the database file later
// (a checkpoint, with its fsyncs, every walAutocheckpoint pages a command writes) and read back
// by the next process, which rebuilds the WAL index from the whole WAL. An index on the claims
// table is one more page in every commit that inserts, moves or frees a claim, so only the
// indexes some query uses are kept (migration 0008 dropped two nothing used: 23 and 18 pages
// to 18 and 14 here, 19 and 16 to 15 and 12 through `volctl volume claim` and `release`). A
// change that writes more pages fails here and has to say why. The state mark (migration 0009,
// store/walpair.go) is one page in each commit that changes a row, four here each way (18 and 14
// to 22 and 18): what lets Open refuse a WAL beside a database it is not of, which SQLite
// applied without a word, mixing two states.
func TestPagesPerLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	wal := filepath.Join(h.dir, store.FileName+"-wal")
	// The WAL only grows while a store is open (a checkpointed one is written again from its
	// start); Close checkpoints and removes it, so each op starts from none.
	walPages := func() int64 {
		fi, err := os.Stat(wal)
		if errors.Is(err, fs.ErrNotExist) {
			return 0
		} else if err != nil {
			t.Fatal(err)
		}
		return fi.Size() / (4096 + 24)
	}
	measure := func(what string, want int64, op func()) {
		t.Helper()
		h.open(Config{})
		before := walPages()
		op()
		if got := walPages() - before; got > want {
			t.Errorf("%s in a new process wrote %d pages to the WAL, want at most %d", what, got, want)
		}
	}
	measure("claim", 22, func() { h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"}) })
	measure("release", 18, func() { h.release("db", "web-0") })
}
