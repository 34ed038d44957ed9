package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// hugeZone is a node topology far past CSI's bounds: one segment of 1 MiB.
var hugeZone = map[string]string{"zone": strings.Repeat("z", 1<<20)}

// A plugin whose NodeGetInfo answers a node topology of a megabyte (a segment of 1 MiB), at
// registration or after a restart under claims: before, it was recorded with the fingerprint
// (the store's plugin row a megabyte, read by every command), printed whole by plugin status
// and the dashboard, and matched at each claim. Registering it is refused, naming the plugin
// and what to do; a restart into it refuses the connection, recording nothing of it.
func TestNodeTopologyPastItsBoundIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.open(Config{Timeouts: contentTimeouts}) // NodeGetInfo answers with 1 MiB of topology
	cfg := csitest.DefaultMemConfig()
	cfg.Topology = &spec.Topology{Segments: hugeZone}
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	_, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "big", Type: spec.PluginMonolith, Socket: socket})
	if err == nil || !strings.Contains(err.Error(), `"big"`) || !strings.Contains(err.Error(), "value of 1048576 bytes") || !strings.Contains(err.Error(), "fix the plugin") {
		t.Fatalf("register a plugin whose node topology holds 1 MiB = %.300v\nwant it refused, naming the plugin \"big\" and the size", err)
	}
	if len(err.Error()) > 2048 {
		t.Errorf("the refusal is %d bytes long", len(err.Error()))
	}

	h.create(volume("v"))
	h.restartWith(func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: hugeZone} })
	_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || !strings.Contains(err.Error(), "value of 1048576 bytes") {
		t.Fatalf("claim through a plugin restarted with a node topology of 1 MiB = %.300v; want the connection refused, saying why", err)
	}
	if p := h.storedPlugin("mem"); len(p.Fingerprint.Topology["zone"]) > 512 {
		t.Errorf("the store records a node topology segment of %d bytes", len(p.Fingerprint.Topology["zone"]))
	}
}

// A node topology past the bound that an older volctl recorded with the fingerprint is not
// reused with the fingerprint while the socket file is the same: the claim's Probe, sent before
// admission, fingerprints the plugin again, and its present topology is what is recorded and
// used. Nor is it matched at admission when the plugin cannot be fingerprinted again (it does
// not answer): the claim is refused, saying what reads it again. Before, the claim's refusal
// quoted the megabyte whole.
func TestNodeTopologyPastItsBoundRecordedIsNotReused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}} })
	h.create(volume("v"))
	recordHuge := func() {
		h.update(func(tx *store.Tx) error {
			p, err := tx.Plugins().Get("mem")
			if err != nil {
				return err
			}
			p.Fingerprint.Topology = hugeZone
			return tx.Plugins().SetFingerprint("mem", p.Fingerprint)
		})
		h.open(Config{})
	}
	wantRecorded := func(when string) {
		t.Helper()
		if got := h.storedPlugin("mem").Fingerprint.Topology; len(got) != 1 || got["zone"] != "a" {
			t.Errorf("the recorded node topology %s holds %d bytes in zone; want the plugin's {zone=a}", when, len(got["zone"]))
		}
	}

	recordHuge()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	wantRecorded("after a claim through the same socket file")
	h.release("v", "a")

	recordHuge()
	h.restartable(t)()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	if err == nil || !strings.Contains(err.Error(), `plugin "mem"`) || !strings.Contains(err.Error(), "value of 1048576 bytes") ||
		!strings.Contains(err.Error(), "volctl plugin status mem") || len(err.Error()) > 2048 {
		t.Fatalf("claim with a node topology of 1 MiB recorded and the plugin not answering = %.600v\nwant it refused in a few lines, naming the plugin and what to do", err)
	}
	h.serveAgain(t)
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	wantRecorded("after plugin status")
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
}

// storedPlugin reads plugin id's row from the store; an error fails the test.
func (h *harness) storedPlugin(id string) store.Plugin {
	h.t.Helper()
	var p store.Plugin
	h.update(func(tx *store.Tx) error {
		var err error
		p, err = tx.Plugins().Get(id)
		return err
	})
	return p
}

// A plugin whose CreateVolume answers a volume accessible from a megabyte of topology (one
// segment of 1 MiB, or 50,000 topologies): before, it was recorded with the volume, shown whole
// by volume status, the dashboard and export, and matched against the node's at each claim.
// Past the bounds a node's topology is held to (512 bytes a key or value, 16 KiB a topology)
// or 64 KiB of them in all, the answer is refused as one with an ID past its bound is: the
// volume the plugin made is deleted again and nothing is recorded.
func TestCreateAnsweredWithAHugeTopologyIsRefusedAndTheVolumeDeleted(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		edit func(h *harness)
		want string
	}{
		{"a topology segment of 1 MiB", func(h *harness) {
			h.mem.Reconfigure(func(c *csitest.MemConfig) { c.CreateTopology = &spec.Topology{Segments: hugeZone} })
		}, "value of 1048576 bytes"},
		{"50,000 topologies", func(h *harness) {
			h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Raw: manyZones(50000), Times: 1})
		}, "50000 topologies"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.open(Config{Timeouts: contentTimeouts}) // an answer of 1 MiB, or of 50,000 topologies
			tt.edit(h)
			_, err := h.e.CreateVolume(h.ctx, volume("big"))
			if err == nil {
				t.Fatalf("a create answered with %s was recorded with %d topologies", tt.name, len(h.volumeInfo("big").AccessibleTopology))
			}
			for _, want := range []string{"CreateVolume", `"big"`, tt.want, "fix the plugin"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("create error = %.600q; want it to say %q", err, want)
				}
			}
			if n := len(err.Error()); n > 4096 {
				t.Errorf("create error is %d bytes long", n)
			}
			if vols := h.mem.Volumes(); len(vols) != 0 {
				t.Errorf("the plugin still holds %d volume(s) made for the refused create: DeleteVolume was not sent", len(vols))
			}
			if _, err := h.e.Volume(h.ctx, "big"); !errors.Is(err, ErrNotFound) {
				t.Errorf("the refused create of big is still recorded: %v", err)
			}
		})
	}
}

// A plugin whose ListSnapshots names snapshots by IDs of a megabyte (or their source volumes
// so), among snapshots volctl made: the listing was kept whole, and `snapshot list` printed a
// row a megabyte wide, padding every other row of the table to it, and --json carried it. No
// such snapshot can be volctl's (a create answered with an ID past 4 KiB is refused, as a
// volume's is) nor be deleted by hand through it: the entries past the bound are left out, and
// a warning says how many and of what size; the others are listed as before. One whose source
// volume ID alone is past the bound is listed without that source, and a warning says so
// (round 61: left out, one volctl recorded was shown missing,
// TestRecordedSnapshotListedWithAnOversizedSourceIsNotMissing).
func TestSnapshotListingWithHugeIDsLeavesThemOutSayingSo(t *testing.T) {
	t.Parallel()
	h, db := snapshotHarness(t, nil)
	h.open(Config{Now: func() time.Time { return snapshotClock }, Timeouts: contentTimeouts}) // a listing of 2 MiB of IDs
	mine := h.snapshot("nightly")
	h.mem.AddSnapshot(csi.Snapshot{ID: strings.Repeat("s", 1<<20), SourceVolumeID: db.ExternalID, ReadyToUse: true})
	h.mem.AddSnapshot(csi.Snapshot{ID: "snap-other", SourceVolumeID: strings.Repeat("v", 1<<20), ReadyToUse: true})
	h.mem.AddSnapshot(csi.Snapshot{ID: "snap-fine", SourceVolumeID: "vol-elsewhere", ReadyToUse: true})

	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list.Snapshots {
		if len(s.ID) > 4096 || len(s.SourceExternalID) > 4096 {
			t.Errorf("the listing shows a snapshot of %d bytes of ID, from %d bytes of source volume ID", len(s.ID), len(s.SourceExternalID))
			continue
		}
		ids = append(ids, s.ID)
	}
	if len(ids) != 3 || !slices.Contains(ids, mine.ID) || !slices.Contains(ids, "snap-fine") || !slices.Contains(ids, "snap-other") {
		t.Errorf("snapshots listed = %q; want %s, snap-fine and snap-other (without its source)", ids, mine.ID)
	}
	var said []string
	for _, w := range list.Warnings {
		if strings.Contains(w, `plugin "mem" listed 1 snapshot with a snapshot ID of up to 1048576 bytes`) && strings.Contains(w, "not shown") &&
			strings.Contains(w, `plugin "mem" listed 1 snapshot naming the source volume by an ID of up to 1048576 bytes`) && strings.Contains(w, "shown without that source") {
			said = append(said, w)
		}
		if len(w) > 1024 {
			t.Errorf("a warning is %d bytes long", len(w))
		}
	}
	if len(said) != 1 {
		t.Errorf("warnings = %.1000q; want one saying plugin mem listed 1 snapshot with an ID of 1048576 bytes, left out, and 1 named its source so, shown without it", list.Warnings)
	}
	for _, s := range list.Snapshots {
		if s.Missing {
			t.Errorf("snapshot %q is marked missing", s.ID)
		}
	}
}

// A plugin whose CreateVolume answers a volume with a megabyte of volume_context (CSI: 4 KiB
// for a map): before, it was recorded with the volume, shown whole by volume status and the
// dashboard, and sent back in every NodeStageVolume and NodePublishVolume. Past four times
// CSI's bound (16 KiB) the answer is refused as one with a topology or an ID past its bound:
// the volume the plugin made is deleted again and nothing is recorded. Below it, it is kept.
func TestCreateAnsweredWithAHugeVolumeContextIsRefusedAndTheVolumeDeleted(t *testing.T) {
	t.Parallel()
	// Past CSI's bound, within volctl's: kept whole.
	h := newHarness(t, func(c *csitest.MemConfig) { c.CreateContext = map[string]string{"blob": strings.Repeat("c", 8<<10)} })
	h.create(volume("v"))
	if got := len(h.volumeInfo("v").Context["blob"]); got != 8<<10 {
		t.Fatalf("a volume_context of 8 KiB is recorded as %d bytes", got)
	}
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.CreateContext = map[string]string{"blob": strings.Repeat("c", 1<<20)} })
	_, err := h.e.CreateVolume(h.ctx, volume("big"))
	if err == nil {
		t.Fatalf("a create answered with a volume_context of 1 MiB was recorded: %d bytes of context", len(h.volumeInfo("big").Context["blob"]))
	}
	for _, want := range []string{"CreateVolume", `"big"`, "volume_context holds 1048", "4 KiB", "fix the plugin"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("create error = %.600q; want it to say %q", err, want)
		}
	}
	if n := len(err.Error()); n > 4096 {
		t.Errorf("create error is %d bytes long", n)
	}
	if _, err := h.e.Volume(h.ctx, "big"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused create of big is still recorded: %v", err)
	}
	for _, v := range h.mem.Volumes() {
		if len(v.Context["blob"]) > 16<<10 {
			t.Errorf("the plugin still holds volume %.40q made for the refused create: DeleteVolume was not sent", v.ID)
		}
	}
}

// A plugin whose ControllerPublishVolume answers a megabyte of publish_context (CSI: 4 KiB for
// a map), under gRPC's limit: before, it was recorded with the claim and the staging and sent
// back in every NodeStageVolume and NodePublishVolume. Past four times CSI's bound (16 KiB) the
// answer is refused as one over gRPC's limit is: sent once, the claim rolled back (which undoes
// the attachment the plugin made), the error saying what the plugin answered.
func TestPublishContextPastItsBoundIsRefusedAndRolledBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.PublishContext = map[string]string{"device": strings.Repeat("x", 1<<20)}
	})
	h.create(volume("v"))
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		t.Fatalf("a claim whose ControllerPublishVolume answered 1 MiB of publish_context succeeded, recording %d bytes of it", len(h.liveClaims("v")[0].PublishContext["device"]))
	}
	for _, want := range []string{"ControllerPublishVolume", "publish_context that holds 1048", "4 KiB", "rolled back"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim error = %.600q; want it to say %q", err, want)
		}
	}
	if n := len(err.Error()); n > 4096 {
		t.Errorf("claim error is %d bytes long", n)
	}
	if n := h.faults.Calls(csi.RPCControllerPublishVolume); n != 1 {
		t.Errorf("ControllerPublishVolume sent %d times, want once", n)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claim left after the refused answer: %d", len(live))
	}
	if pub := h.mem.PublishedNodes(h.externalID("v")); len(pub) != 0 {
		t.Fatalf("volume still controller-published to %v after rollback", pub)
	}
}
