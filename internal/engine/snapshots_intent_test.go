package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// pendingSnapshot leaves a snapshot of "db" recorded as being created, as a crash between the
// intent and the plugin's answer would: CreateSnapshot keeps failing retryably. It returns the
// snapshot's name.
func pendingSnapshot(t *testing.T, h *harness) string {
	t.Helper()
	h.faults.FailAlways(csi.RPCCreateSnapshot, codes.Unavailable)
	_, err := h.e.CreateSnapshot(h.ctx, "db", "", nil)
	if err == nil || !strings.Contains(err.Error(), "it stays recorded as being created") {
		t.Fatalf("create with an unavailable plugin = %v, want the snapshot left recorded as being created", err)
	}
	h.faults.Clear(csi.RPCCreateSnapshot)
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Snapshots) != 1 || !list.Snapshots[0].Pending || list.Snapshots[0].Name == "" || list.Snapshots[0].SourceVolumeID != "db" {
		t.Fatalf("snapshots after the cut-short create: %+v, want one pending, named, of db", list.Snapshots)
	}
	return list.Snapshots[0].Name
}

// The intent is recorded before CreateSnapshot: a create cut short leaves a tracked snapshot
// that reconcile finishes.
func TestSnapshotIntentFinishedByReconcile(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	name := pendingSnapshot(t, h)
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconcile: %v (%+v)", err, rep.Problems)
	}
	found := false
	for _, a := range rep.Actions {
		found = found || (a.Kind == "snapshotted" && a.VolumeID == "db")
	}
	if !found {
		t.Errorf("reconcile actions %+v, want the snapshot finished", rep.Actions)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Snapshots) != 1 || list.Snapshots[0].Pending || list.Snapshots[0].Name != name || list.Snapshots[0].ID == "" ||
		!list.Snapshots[0].Recorded || !list.Snapshots[0].Listed {
		t.Fatalf("snapshots after reconcile: %+v, want %q recorded and listed", list.Snapshots, name)
	}
	if n := len(h.mem.Snapshots()); n != 1 {
		t.Errorf("plugin has %d snapshots, want 1", n)
	}
}

// `snapshot delete PLUGIN NAME` removes a snapshot still being created: it is finished (the
// only way to learn its ID) and deleted.
func TestSnapshotIntentDeletedByName(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	name := pendingSnapshot(t, h)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", name, nil); err != nil {
		t.Fatal(err)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Snapshots) != 0 || len(h.mem.Snapshots()) != 0 {
		t.Fatalf("after deleting the pending snapshot: listed %+v, plugin has %+v", list.Snapshots, h.mem.Snapshots())
	}
}

// snapshot list and delete send the secrets given; without them, delete sends the source
// volume's, and once the volume is forgotten, those the snapshot was made with.
func TestSnapshotSecrets(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	given := spec.Secrets{"token": "given"}
	if _, err := h.e.ListSnapshots(h.ctx, "mem", given); err != nil {
		t.Fatal(err)
	}
	if r, _ := csitest.LastRequest[csi.ListSnapshotsRequest](h.mem); r.Secrets["token"] != "given" {
		t.Errorf("ListSnapshots secrets %v, want the given ones", r.Secrets)
	}
	// Without them: the plugin's volumes' secrets, when they agree; none, with a warning, when not.
	if _, err := h.e.ListSnapshots(h.ctx, "mem", nil); err != nil {
		t.Fatal(err)
	}
	if r, _ := csitest.LastRequest[csi.ListSnapshotsRequest](h.mem); r.Secrets["token"] != "s3cr3t" {
		t.Errorf("ListSnapshots without secrets sent %v, want the volume's", r.Secrets)
	}
	other := volume("other")
	other.Secrets = spec.Secrets{"token": "another"}
	h.create(other)
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := csitest.LastRequest[csi.ListSnapshotsRequest](h.mem); r.Secrets != nil ||
		len(list.Warnings) != 1 || !strings.Contains(list.Warnings[0], `volumes "db" and "other" have different secrets`) {
		t.Errorf("ListSnapshots with differing volume secrets sent %v, warnings %q", r.Secrets, list.Warnings)
	}
	if err := h.e.DeleteVolume(h.ctx, "other"); err != nil {
		t.Fatal(err)
	}
	a := h.snapshot("a")
	b := h.snapshot("b")
	if err := h.e.DeleteSnapshot(h.ctx, "mem", a.ID, given); err != nil {
		t.Fatal(err)
	}
	if r, _ := csitest.LastRequest[csi.DeleteSnapshotRequest](h.mem); r.Secrets["token"] != "given" {
		t.Errorf("DeleteSnapshot with --secret sent %v, want the given ones", r.Secrets)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", b.ID, nil); err != nil {
		t.Fatal(err)
	}
	if r, _ := csitest.LastRequest[csi.DeleteSnapshotRequest](h.mem); r.Secrets["token"] != "s3cr3t" {
		t.Errorf("DeleteSnapshot of a forgotten volume's snapshot sent %v, want the secrets it was made with", r.Secrets)
	}
}

// snapshotOfDeregisteredPlugin makes snapshot "keep" of volume db, then forgets plugin mem with
// --force: the snapshot stays recorded.
func snapshotOfDeregisteredPlugin(t *testing.T) (*harness, SnapshotInfo) {
	t.Helper()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("keep")
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatal(err)
	}
	return h, s
}

// A snapshot stays deletable after its plugin is deregistered: volctl reaches the plugin where
// it was when the snapshot was made.
func TestSnapshotDeletableAfterPluginDeregistered(t *testing.T) {
	t.Parallel()
	h, s := snapshotOfDeregisteredPlugin(t)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Fatalf("delete after the plugin was deregistered: %v", err)
	}
	if n := len(h.mem.Snapshots()); n != 0 {
		t.Errorf("plugin still has %d snapshot(s)", n)
	}
	if r, _ := csitest.LastRequest[csi.DeleteSnapshotRequest](h.mem); r.SnapshotID != s.ID || r.Secrets["token"] != "s3cr3t" {
		t.Errorf("DeleteSnapshot request %+v", r)
	}
	list, err := h.e.ListSnapshots(h.ctx, "", nil)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if len(list.Snapshots) != 0 {
		t.Errorf("records left: %+v", list.Snapshots)
	}
}

// Reaching a deregistered plugin's recorded socket, volctl still insists on the driver that made
// the snapshot: another driver answering there gets no DeleteSnapshot (its NOT_FOUND would make
// volctl forget a snapshot that still exists).
func TestSnapshotDeleteRefusesAnotherDriverAfterDeregistration(t *testing.T) {
	t.Parallel()
	h, s := snapshotOfDeregisteredPlugin(t)
	h.stopServe()
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "impostor.csi.volctl.test"
	impostor := csitest.NewMemPlugin(cfg)
	csitest.ServeAt(t, h.socket, csitest.WithServer(impostor))
	err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"impostor.csi.volctl.test", registered as "mem.csi.volctl.test"`) {
		t.Fatalf("delete through another driver = %v, want a conflict naming both drivers", err)
	}
	if n := impostor.CallCount(csi.RPCDeleteSnapshot); n != 0 {
		t.Errorf("the other driver got %d DeleteSnapshot", n)
	}
	list, _ := h.e.ListSnapshots(h.ctx, "", nil)
	if len(list.Snapshots) != 1 || list.Snapshots[0].ID != s.ID {
		t.Errorf("records after the refusal: %+v, want the snapshot kept", list.Snapshots)
	}
}

// The same when the plugin ID is still registered but now names another driver: its volumes
// are gone (the source volume deleted, its snapshot kept), so registering the ID again with
// another driver's socket is allowed, or the agent re-registered it at start while another
// driver answered on the socket. The snapshot's record pins the driver that made it.
func TestSnapshotDeleteRefusesAnotherDriverUnderTheSameID(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s, err := h.e.CreateSnapshot(h.ctx, "db", "keep", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeleteVolume(h.ctx, "db"); err != nil {
		t.Fatal(err)
	}
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "impostor.csi.volctl.test"
	impostor := csitest.NewMemPlugin(cfg)
	sock, _ := csitest.Serve(t, csitest.WithServer(impostor))
	h.registerPlugin("mem", sock)

	err = h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "impostor.csi.volctl.test") || !strings.Contains(err.Error(), "mem.csi.volctl.test") {
		t.Fatalf("delete through another driver = %v, want a conflict naming both drivers", err)
	}
	if n := impostor.CallCount(csi.RPCDeleteSnapshot); n != 0 {
		t.Errorf("the other driver got %d DeleteSnapshot", n)
	}
	if n := len(h.mem.Snapshots()); n != 1 {
		t.Errorf("the driver that made it has %d snapshot(s), want 1", n)
	}
	list, _ := h.e.ListSnapshots(h.ctx, "", nil)
	var kept bool
	for _, sn := range list.Snapshots {
		kept = kept || (sn.ID == s.ID && sn.Recorded)
	}
	if !kept {
		t.Errorf("records after the refusal: %+v, want the snapshot kept", list.Snapshots)
	}
}

// A plugin that answers CreateSnapshot for one volume with a snapshot volctl records for another
// (a snapshot of another source): the snapshot stays the first volume's, and the create is
// refused, naming it. Recording it again as the second volume's would hand the first volume's
// snapshot to whoever deletes the second's.
func TestCreateSnapshotRefusesAnotherVolumesSnapshot(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.create(volume("other"))
	s, err := h.e.CreateSnapshot(h.ctx, "db", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.mem.AnswerSnapshotWith(s.ID)
	_, err = h.e.CreateSnapshot(h.ctx, "other", "", nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), s.ID) || !strings.Contains(err.Error(), `"db"`) {
		t.Fatalf("snapshot of other answered with db's snapshot = %v; want a conflict naming it and \"db\"", err)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range list.Snapshots {
		if sn.ID == s.ID && sn.SourceVolumeID != "db" {
			t.Errorf("snapshot %s is now recorded as %q's", s.ID, sn.SourceVolumeID)
		}
		if sn.SourceVolumeID == "other" {
			t.Errorf("a snapshot of other is recorded: %+v", sn)
		}
	}
}
