package engine

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin failing a create with a 1 MiB message: the event the failure leaves (the log keeps
// 10,000, each holding one) and the error keep a bounded part of it, not the megabyte.
func TestPluginMessageInAnEventIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.open(Config{Timeouts: contentTimeouts}) // an answer of 1 MiB of message
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.InvalidArgument, Message: strings.Repeat("x", 1<<20), Times: 1})
	_, err := h.e.CreateVolume(h.ctx, volume("v"))
	if err == nil || len(err.Error()) > 2*csi.MaxPluginMessage {
		t.Fatalf("create failing with a 1 MiB message: an error of %d bytes, want one under %d", len(err.Error()), 2*csi.MaxPluginMessage)
	}
	if ev := h.eventMessages("volume-create", "v"); ev == "" || len(ev) > 2*csi.MaxPluginMessage {
		t.Errorf("the create's event is %d bytes, want one under %d", len(ev), 2*csi.MaxPluginMessage)
	}
}

// A plugin whose snapshot says it was made in a year no protobuf Timestamp holds (10000, -5),
// or in one past what volctl stores (3000: nanoseconds since 1970 overflow 64 bits), or at
// 1970-01-01T00:00:00Z (the zero Timestamp, read as not stated), with a negative size. The snapshot is recorded with the plugin's time when it is one volctl can
// keep, else the time volctl recorded it (as for a snapshot whose plugin gives no time), never
// a wrapped-around one (3000 was recorded as 1830); its size as not stated; and `snapshot
// list --json` still writes the list (a time past 9999 made encoding/json fail the whole
// command, every plugin's snapshots with it), from the plugin's listing and from the records.
func TestSnapshotTimeAndSizeAPluginLiesAbout(t *testing.T) {
	t.Parallel()
	y3000, y2100 := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	// listed: the time shown while the plugin lists the snapshot; recorded: from the records alone.
	for name, tc := range map[string]struct{ at, listed, recorded time.Time }{
		"in the year 10000": {time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), snapshotClock, snapshotClock},
		"in the year -5":    {time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), snapshotClock, snapshotClock},
		"in the year 3000":  {y3000, y3000, snapshotClock},
		"in the year 2100":  {y2100, y2100, y2100},
		// The zero Timestamp message, which the store keeps as "none": it read back with no
		// time at all (created_at left out of --json) while the plugin's listing said 1970.
		"at the epoch": {time.Unix(0, 0).UTC(), snapshotClock, snapshotClock},
	} {
		t.Run(name, func(t *testing.T) {
			h, db := snapshotHarness(t, nil)
			h.mem.AddSnapshot(csi.Snapshot{ID: "mine", SourceVolumeID: db.ExternalID, SizeBytes: -5, CreatedAt: tc.at, ReadyToUse: true})
			h.snapshot("mine")
			for _, listed := range []bool{true, false} {
				if !listed {
					h.mem.DropSnapshot("mine") // the records alone
				}
				list, err := h.e.ListSnapshots(h.ctx, "", nil)
				if err != nil || len(list.Snapshots) != 1 {
					t.Fatalf("list (listed by the plugin: %t): %+v, %v; want the snapshot", listed, list.Snapshots, err)
				}
				if _, err := json.Marshal(list); err != nil {
					t.Errorf("list (listed by the plugin: %t) as JSON: %v", listed, err)
				}
				s := list.Snapshots[0]
				if s.SizeBytes != 0 {
					t.Errorf("size (listed by the plugin: %t) = %d, want 0, not stated", listed, s.SizeBytes)
				}
				if want := map[bool]time.Time{true: tc.listed, false: tc.recorded}[listed]; !s.CreatedAt.Equal(want) {
					t.Errorf("created at %v (listed by the plugin: %t), want %v", s.CreatedAt, listed, want)
				}
			}
		})
	}
}

// A plugin that makes the volume, or takes the snapshot, and answers with a message volctl
// cannot decode: a string field that is not UTF-8 (a C++ plugin's protobuf writes one, with a
// warning in its log), which Go's protobuf refuses. gRPC says INTERNAL, as of a plugin that
// failed, but the plugin did the call: as for an answer over gRPC's size limit, the create
// stays recorded and the error names the plugin-side name, rather than forgetting storage the
// plugin has ("the plugin failed internally; check its logs", the volume left with no record).
func TestCreateWhoseAnswerCannotBeDecodedKeepsTheIntent(t *testing.T) {
	t.Parallel()
	t.Run("volume", func(t *testing.T) {
		h := newHarness(t, nil)
		h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Raw: csitest.AppendString("vol-\xff", 1, 2), Times: 1}) // volume.volume_id
		_, err := h.e.CreateVolume(h.ctx, volume("v"))
		v := h.createKept("v", err)
		if !strings.Contains(err.Error(), v.CSIName) || !strings.Contains(err.Error(), "cannot be decoded") {
			t.Errorf("error does not say the answer could not be decoded and name the plugin-side volume %q: %v", v.CSIName, err)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		h, _ := snapshotHarness(t, nil)
		h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Raw: csitest.AppendString("snap-\xff", 1, 2), Times: 1}) // snapshot.snapshot_id
		_, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil)
		if err == nil || len(h.mem.Snapshots()) != 1 {
			t.Fatalf("snapshot: %v, the plugin holding %d snapshots; want an error, the plugin holding the one it took", err, len(h.mem.Snapshots()))
		}
		list, lerr := h.e.ListSnapshots(h.ctx, "mem", nil)
		if lerr != nil || !slices.ContainsFunc(list.Snapshots, func(s SnapshotInfo) bool { return s.Name == "s1" && s.Pending }) {
			t.Errorf("snapshots after it: %+v, %v; want s1 pending (the plugin took it); error: %v", list.Snapshots, lerr, err)
		}
	})
}

// A node expansion left owed (the node failed it), then an expand to a larger size whose
// ControllerExpandVolume answers node_expansion_required false (a plugin whose answer flips,
// or that needs the node only once). The file system is still the size before the first
// expand: the expand, holding the volume's lock with the volume published here, sends the owed
// NodeExpandVolume (bounded by this request's limit, not the first one's) rather than exit 0,
// "expanded", the debt left for a later reconcile; and `volume status` says nothing is owed
// once it is done.
func TestLargerExpandSendsTheNodeExpansionStillOwed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.faults.FailOnce(csi.RPCNodeExpandVolume, codes.Internal)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 4*mib); err == nil || h.owed("v") != 4*mib {
		t.Fatalf("expand with a failing node: %v, owed %d; want it failed and 4 MiB owed", err, h.owed("v"))
	}
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Raw: csitest.AppendBool(false, 2), Times: 1}) // node_expansion_required
	// With a limit of its own: given none, an expand is bounded by the volume's capacity_max,
	// the first expand's 4 MiB, and 8 MiB is refused (recordedLimit).
	if _, err := h.e.ExpandVolume(h.ctx, "v", 8*mib, 16*mib); err != nil {
		t.Fatal(err)
	}
	reqs := h.nodeExpands()
	if len(reqs) != 1 || reqs[0].VolumePath != cl.TargetPath || reqs[0].CapacityMin != 4*mib || reqs[0].CapacityMax != 16*mib {
		t.Errorf("NodeExpandVolume after the larger expand: %+v; want the owed one (4 MiB, this expand's 16 MiB limit) at %s", reqs, cl.TargetPath)
	}
	if got := h.owed("v"); got != 0 {
		t.Errorf("volume status after the larger expand: node expansion owed %d, want none", got)
	}
}
