package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

var snapshotClock = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// snapshotHarness is a harness whose engine clock is fixed, with volume "db" created.
func snapshotHarness(t *testing.T, mutate func(*csitest.MemConfig)) (*harness, VolumeInfo) {
	t.Helper()
	h := newHarness(t, mutate)
	h.open(Config{Now: func() time.Time { return snapshotClock }})
	return h, h.create(volume("db"))
}

// snapshot makes snapshot name of volume db (a derived name when empty), no parameters.
func (h *harness) snapshot(name string) SnapshotInfo {
	h.t.Helper()
	s, err := h.e.CreateSnapshot(h.ctx, "db", name, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// pluginClient talks to the harness's plugin directly, as another orchestrator would.
func (h *harness) pluginClient() *csi.Client {
	h.t.Helper()
	c, err := csi.New(csi.Config{ControllerSocket: h.socket, NodeSocket: h.socket,
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 2 * time.Second}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

func TestCreateSnapshot(t *testing.T) {
	t.Parallel()
	h, v := snapshotHarness(t, nil)
	wantName := csiName("default", "db") + "-" + "1740830400"
	tests := []struct {
		name, given, want string
		params            map[string]string
	}{
		{name: "derived name", want: wantName},
		{name: "given name and parameters", given: "nightly", want: "nightly", params: map[string]string{"tier": "cold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.mem.ResetCalls()
			got, err := h.e.CreateSnapshot(h.ctx, "db", tt.given, tt.params)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := csitest.LastRequest[csi.CreateSnapshotRequest](h.mem)
			if tt.given == "" {
				// The derived name's hash is taken over a nonce (snapshotName): its shape is
				// the volume's CSI name's, its hash another one each time.
				if len(req.Name) != len(tt.want) || req.Name == tt.want || !strings.HasPrefix(req.Name, "volctl-db-") || !strings.HasSuffix(req.Name, "-1740830400") {
					t.Errorf("derived name %q, want one shaped as %q with another hash", req.Name, tt.want)
				}
				tt.want = req.Name
			}
			if req.Name != tt.want || req.SourceVolumeID != v.ExternalID || req.Secrets["token"] != "s3cr3t" ||
				!reflect.DeepEqual(req.Parameters, tt.params) {
				t.Errorf("CreateSnapshot request = name %q source %q params %v", req.Name, req.SourceVolumeID, req.Parameters)
			}
			want := SnapshotInfo{PluginID: "mem", ID: tt.want, Name: tt.want, SourceVolumeID: "db",
				SourceExternalID: v.ExternalID, SizeBytes: v.CapacityBytes, ReadyToUse: true, Parameters: tt.params, Recorded: true}
			got.CreatedAt = time.Time{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("snapshot = %+v\nwant       %+v", got, want)
			}
		})
	}
	if len(wantName) > 63 {
		t.Errorf("derived name %q is longer than 63 characters, which some plugins refuse", wantName)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "snapshot-create"})
	if err != nil || len(evs) != 2 || evs[0].VolumeID != "db" {
		t.Fatalf("snapshot-create events = %+v, %v", evs, err)
	}
}

// The derived name is fixed for one command: a retry after a retryable failure names the same
// snapshot, and the plugin's idempotency keeps it one snapshot. A second create within the same
// second is a second snapshot, under a distinct name (issue 13: it used to return the first;
// the name's nonce makes it distinct, snapshotName).
func TestCreateSnapshotDerivedNameIsIdempotent(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.faults.FailOnce(csi.RPCCreateSnapshot, codes.Unavailable)
	first := h.snapshot("")
	if n := h.faults.Calls(csi.RPCCreateSnapshot); n != 2 {
		t.Fatalf("CreateSnapshot sent %d times, want 2 (one retry)", n)
	}
	again := h.snapshot("")
	if first.ID == again.ID || first.Name == again.Name || len(h.mem.Snapshots()) != 2 {
		t.Fatalf("two creates in one second made %d snapshots (%q %q, %q %q), want 2 with distinct names",
			len(h.mem.Snapshots()), first.ID, first.Name, again.ID, again.Name)
	}
	if len(again.Name) != len(first.Name) || !strings.HasSuffix(again.Name, "-1740830400") {
		t.Errorf("second name %q, want one shaped as the first's, %q", again.Name, first.Name)
	}
}

// Creating a named snapshot again returns the first one, and its record keeps the parameters
// it was made with.
func TestCreateSnapshotAgainKeepsRecord(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "s1", map[string]string{"kind": "full"}); err != nil {
		t.Fatal(err)
	}
	again := h.snapshot("s1")
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kind": "full"}
	if !reflect.DeepEqual(again.Parameters, want) || len(list.Snapshots) != 1 || !reflect.DeepEqual(list.Snapshots[0].Parameters, want) {
		t.Fatalf("after creating again: %+v, list %+v; want parameters %v kept", again, list.Snapshots, want)
	}
}

func TestSnapshotCapabilityMissing(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) {
		c.Controller.CreateDeleteSnapshot, c.Controller.ListSnapshots = false, false
	})
	_, err := h.e.CreateSnapshot(h.ctx, "db", "", nil)
	want := `snapshot volume "db": plugin "mem" cannot snapshot volumes (no CREATE_DELETE_SNAPSHOT controller capability)`
	if !errors.Is(err, ErrInvalid) || err == nil || err.Error() != want {
		t.Fatalf("create: err = %v, want %q", err, want)
	}
	err = h.e.DeleteSnapshot(h.ctx, "mem", "snap-1", nil)
	want = `delete snapshot "snap-1" of plugin "mem": plugin "mem" cannot delete snapshots (no CREATE_DELETE_SNAPSHOT controller capability)`
	if !errors.Is(err, ErrInvalid) || err == nil || err.Error() != want {
		t.Fatalf("delete: err = %v, want %q", err, want)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantWarn := []string{`plugin "mem": cannot list snapshots (no LIST_SNAPSHOTS controller capability): showing volctl's records only`}
	if !reflect.DeepEqual(list.Warnings, wantWarn) || len(list.Snapshots) != 0 {
		t.Fatalf("list = %+v, want no snapshots and warning %q", list, wantWarn[0])
	}
	for _, rpc := range []string{csi.RPCCreateSnapshot, csi.RPCDeleteSnapshot, csi.RPCListSnapshots} {
		if n := h.mem.CallCount(rpc); n != 0 {
			t.Errorf("%s sent %d times to a plugin without the capability", rpc, n)
		}
	}
}

// Without LIST_SNAPSHOTS the list is volctl's records, and it says so.
func TestListSnapshotsRecordsOnly(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.Controller.ListSnapshots = false })
	h.snapshot("s1")
	list, err := h.e.ListSnapshots(h.ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Snapshots) != 1 || !list.Snapshots[0].Recorded || list.Snapshots[0].Listed || list.Snapshots[0].Missing ||
		len(list.Warnings) != 1 || !strings.Contains(list.Warnings[0], "no LIST_SNAPSHOTS") {
		t.Fatalf("list = %+v", list)
	}
}

func TestListSnapshotsMergesPluginAndRecords(t *testing.T) {
	t.Parallel()
	h, v := snapshotHarness(t, nil)
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "by-volctl", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	h.snapshot("gone")
	// Another orchestrator makes one snapshot and deletes one of volctl's behind its back.
	pc := h.pluginClient()
	if _, err := pc.CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: v.ExternalID, Name: "by-other"}); err != nil {
		t.Fatal(err)
	}
	if err := pc.DeleteSnapshot(h.ctx, csi.DeleteSnapshotRequest{SnapshotID: "gone"}); err != nil {
		t.Fatal(err)
	}

	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID, Name, Source               string
		Recorded, Listed, Missing      bool
		HasParams, HasCreated, HasSize bool
	}
	var got []row
	for _, s := range list.Snapshots {
		got = append(got, row{s.ID, s.Name, s.SourceVolumeID, s.Recorded, s.Listed, s.Missing,
			len(s.Parameters) > 0, !s.CreatedAt.IsZero(), s.SizeBytes > 0})
	}
	want := map[string]row{
		"by-volctl": {"by-volctl", "by-volctl", "db", true, true, false, true, true, true},
		"gone":      {"gone", "gone", "db", true, false, true, false, true, true},
		"by-other":  {"by-other", "", "db", false, true, false, false, true, true},
	}
	if len(got) != len(want) || len(list.Warnings) != 0 {
		t.Fatalf("list = %+v", list)
	}
	for _, r := range got {
		if want[r.ID] != r {
			t.Errorf("%s = %+v, want %+v", r.ID, r, want[r.ID])
		}
	}
	// The JSON contract: arrays are never null.
	b, _ := json.Marshal(SnapshotList{Snapshots: []SnapshotInfo{}, Warnings: []string{}})
	if string(b) != `{"snapshots":[],"warnings":[]}` {
		t.Errorf("empty list JSON = %s", b)
	}
	if _, err := h.e.ListSnapshots(h.ctx, "nope", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown plugin: err = %v, want not found", err)
	}
}

func TestDeleteSnapshot(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("s1")
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Fatal(err)
	}
	req, _ := csitest.LastRequest[csi.DeleteSnapshotRequest](h.mem)
	if req.SnapshotID != s.ID || req.Secrets["token"] != "s3cr3t" {
		t.Errorf("DeleteSnapshot request = %q with secrets %v, want the source volume's", req.SnapshotID, req.Secrets.Plain())
	}
	if n := len(h.mem.Snapshots()); n != 0 {
		t.Errorf("plugin still holds %d snapshots", n)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil || len(list.Snapshots) != 0 {
		t.Fatalf("after delete: %+v, %v", list, err)
	}
	// Deleting again, or a snapshot nobody knows, is done already.
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Errorf("second delete: %v", err)
	}
	h.faults.FailAlways(csi.RPCDeleteSnapshot, codes.NotFound)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "never-was", nil); err != nil {
		t.Errorf("delete of an unknown snapshot answered NOT_FOUND: %v", err)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "nope", "s1", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown plugin: err = %v, want not found", err)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty ID: err = %v, want invalid", err)
	}
}

// A final error from the plugin leaves volctl's record in place, so the delete can be retried.
func TestDeleteSnapshotFailureKeepsRecord(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.snapshot("s1")
	h.faults.FailAlways(csi.RPCDeleteSnapshot, codes.FailedPrecondition)
	err := h.e.DeleteSnapshot(h.ctx, "mem", "s1", nil)
	if err == nil || !strings.HasPrefix(err.Error(), `delete snapshot "s1" of plugin "mem": DeleteSnapshot: FailedPrecondition`) {
		t.Fatalf("err = %v", err)
	}
	list, _ := h.e.ListSnapshots(h.ctx, "mem", nil)
	if len(list.Snapshots) != 1 || !list.Snapshots[0].Recorded {
		t.Fatalf("record lost after a failed delete: %+v", list)
	}
}

// A volume created with snapshot_id or clone_id asks the plugin for that content source; a
// clone_id naming a volctl volume is sent as that volume's external ID.
func TestCreateVolumeFromSnapshotAndClone(t *testing.T) {
	t.Parallel()
	h, src := snapshotHarness(t, nil)
	snap := h.snapshot("s1")
	tests := []struct {
		id, snapshot, clone string
		wantSnap, wantClone string
	}{
		{id: "from-snap", snapshot: snap.ID, wantSnap: snap.ID},
		{id: "from-clone", clone: "db", wantClone: src.ExternalID},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			sv := volume(tt.id)
			sv.SnapshotID, sv.CloneID = tt.snapshot, tt.clone
			v := h.create(sv)
			req, _ := csitest.LastRequest[csi.CreateVolumeRequest](h.mem)
			if req.SnapshotID != tt.wantSnap || req.CloneID != tt.wantClone {
				t.Errorf("CreateVolume content source = snapshot %q clone %q, want %q %q", req.SnapshotID, req.CloneID, tt.wantSnap, tt.wantClone)
			}
			if v.SnapshotID != tt.snapshot || v.CloneID != tt.wantClone {
				t.Errorf("volume records snapshot %q clone %q", v.SnapshotID, v.CloneID)
			}
		})
	}
}

func TestSnapshotOfUnknownOrBusyVolume(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	if _, err := h.e.CreateSnapshot(h.ctx, "nope", "", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown volume: err = %v, want not found", err)
	}
	// A snapshot waits for the volume's lock like every other operation on it.
	unlock := h.lockVolume("db")
	defer unlock()
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	if _, err := h.e.CreateSnapshot(ctx, "db", "", nil); err == nil || !strings.Contains(err.Error(), `lock on volume "db"`) {
		t.Errorf("locked volume: err = %v", err)
	}
}

// Deregistering a plugin that still has snapshots recorded is refused, naming them and how to
// delete them: they are deleted through the plugin's driver. --force forgets the plugin and
// keeps the records, still deletable (here after registering it again; without that,
// TestSnapshotDeletableAfterPluginDeregistered).
func TestDeregisterPluginWithSnapshotsRefused(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("s1")
	if _, err := h.e.DeregisterVolume(h.ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	err := h.e.DeregisterPlugin(h.ctx, "mem", false)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `1 snapshot(s) recorded: "s1"`) ||
		!strings.Contains(err.Error(), "volctl volume snapshot delete mem SNAPSHOT_ID") {
		t.Fatalf("deregister with a snapshot recorded: err = %v, want a conflict naming it and the delete command", err)
	}
	if ps, err := h.e.Plugins(h.ctx); err != nil || len(ps) != 1 {
		t.Fatalf("the refused deregister forgot the plugin: %+v, %v", ps, err)
	}
	// --force forgets the plugin; the record stays, and is deletable once it is back.
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatal(err)
	}
	h.registerPlugin("mem", h.socket)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Fatalf("delete after re-registering: %v", err)
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem", false); err != nil {
		t.Fatalf("deregister with no snapshot left: %v", err)
	}
}

// TestDeleteRefusedWhileASnapshotOfTheVolumeIsBeingCreated: a snapshot create cut short (its
// CreateSnapshot unanswered) leaves the snapshot recorded as being created, for reconcile to
// send again. Found by running volctl commands concurrently with interrupts: a volume delete
// went ahead beside it, and every reconcile after reported the snapshot forever, CreateSnapshot
// answering NOT_FOUND for a source that was gone. The delete is refused, naming the snapshot;
// once reconcile finished it, the volume is deleted as any volume with snapshots is.
func TestDeleteRefusedWhileASnapshotOfTheVolumeIsBeingCreated(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.faults.FailAlways(csi.RPCCreateSnapshot, codes.Unavailable)
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil); err == nil {
		t.Fatal("snapshot create with CreateSnapshot unanswered succeeded")
	}
	err := h.e.DeleteVolume(h.ctx, "db")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"nightly"`) || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Fatalf("delete with a snapshot being created: %v; want a conflict naming it", err)
	}
	if n := h.faults.Calls(csi.RPCDeleteVolume); n != 0 {
		t.Fatalf("DeleteVolume sent %d times", n)
	}
	if v := h.volumeInfo("db"); v.State != "ready" {
		t.Fatalf("volume state after the refused delete = %q, want ready", v.State)
	}
	h.faults.Clear(csi.RPCCreateSnapshot)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "nightly", nil); err != nil {
		t.Fatalf("snapshot delete: %v", err)
	}
	if err := h.e.DeleteVolume(h.ctx, "db"); err != nil {
		t.Fatalf("delete once the snapshot is finished and deleted: %v", err)
	}
}
