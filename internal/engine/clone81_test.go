package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store/storetest"
)

// newHarnessServing is newHarness whose plugin is served with the extra options opts (an
// interceptor: a plugin that is not polite).
func newHarnessServing(t *testing.T, opts ...csitest.ServeOption) *harness {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	h := &harness{t: t, ctx: context.Background(), mem: csitest.NewMemPlugin(cfg), faults: csitest.NewFaults(), dir: t.TempDir()}
	storetest.Seed(t, h.dir)
	h.socket, h.stopServe = csitest.Serve(t, append([]csitest.ServeOption{csitest.WithServer(h.mem), csitest.WithFaults(h.faults)}, opts...)...)
	h.mounts = newFakeMounts(h.mem)
	h.open(Config{})
	h.registerPlugin("mem", h.socket)
	return h
}

// ignoringContentSource is a CreateVolume that drops the request's volume_content_source before
// the plugin sees it: a plugin that ignores the snapshot or volume asked, makes an empty volume
// and answers OK, naming no content source (the field is optional in the answer).
func ignoringContentSource() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csipb.CreateVolumeRequest); ok && r.GetVolumeContentSource() != nil {
			r = proto.Clone(r).(*csipb.CreateVolumeRequest)
			r.VolumeContentSource = nil
			return handler(ctx, r)
		}
		return handler(ctx, req)
	}
}

// TestRestoreFromASnapshotThePluginSaysItHasNotIsNotSaidCreated: `volume create` of a spec whose
// snapshot_id the plugin does not have. volctl's readiness check asks the plugin first
// (restoreReady: ListSnapshots with the snapshot_id filter), which answers, complete, that it
// has no such snapshot; the design leaves that to CreateVolume ("its CreateVolume answers for
// that", with NOT_FOUND). A plugin that ignores volume_content_source answers CreateVolume OK
// with an empty volume, naming no content source, and volctl records the volume as restored
// from the snapshot and says "created", exit 0: the user's data is not there, and volctl had
// the plugin's own word that the snapshot it was to come from does not exist. Correct: a
// restore whose check found no such snapshot, answered with a volume that names no content
// source, is not recorded as restored (refused, the volume made for it deleted again or named
// for cleanup), the error naming the snapshot the plugin does not have.
// Found by helper review81 (clone).
func TestRestoreFromASnapshotThePluginSaysItHasNotIsNotSaidCreated(t *testing.T) {
	t.Parallel()
	h := newHarnessServing(t, csitest.WithInterceptor(ignoringContentSource()))
	sv := volume("restored")
	sv.SnapshotID = "snap-never-made"
	v, err := h.e.CreateVolume(h.ctx, sv)
	if h.mem.CallCount(csi.RPCListSnapshots) == 0 {
		t.Fatalf("the restore's check did not ask the plugin (ListSnapshots): precondition not met")
	}
	if err == nil {
		t.Fatalf("restore from snapshot %q, which the plugin's listing says it does not have, answered with volume %q naming no content source: "+
			"recorded as volume %q (state %s, snapshot_id %q), nothing said; want it refused, naming the snapshot the plugin does not have", sv.SnapshotID, v.ExternalID, v.ID, v.State, v.SnapshotID)
	}
	if !strings.Contains(err.Error(), "snap-never-made") {
		t.Errorf("refused restore: %v; want it to name snapshot %q", err, sv.SnapshotID)
	}
	if got, gerr := h.e.Volume(h.ctx, "restored"); gerr == nil && got.State == "ready" {
		t.Errorf("volume restored is recorded ready after the refusal: %+v", got)
	}
	// The empty volume the plugin made for this request is deleted again, not left behind.
	if vols := h.mem.Volumes(); len(vols) != 0 {
		t.Errorf("the plugin holds %d volume(s) after the refusal (%+v); want the empty one made for the restore deleted again", len(vols), vols)
	}
	t.Logf("refused: %v", err)
}

// withContentSource makes an OK CreateVolume answer name content source src: a plugin whose
// answer says the volume was pre-populated from what src names.
func withContentSource(src *csipb.VolumeContentSource) func(proto.Message) {
	return func(m proto.Message) {
		if r, ok := m.(*csipb.CreateVolumeResponse); ok && r.GetVolume() != nil {
			r.Volume.ContentSource = src
		}
	}
}

// TestEmptyVolumeAnsweredPrePopulatedFromASnapshotIsRefused: a create of an empty volume (no
// snapshot_id, no clone_id) answered with a volume whose content_source says it was
// pre-populated from a snapshot, its snapshot_id left empty (the CSI spec makes it REQUIRED).
// createdVolume reads an empty ID as no source at all and records the volume as the empty one
// asked, "created", where the plugin said it holds a snapshot's data, perhaps someone else's:
// the very reason a content source of a type volctl does not know is refused
// (TestCreateAnsweredWithAContentSourceOfAnUnknownTypeIsRefused), and one naming any snapshot
// for an empty volume is. Correct: refused as another source than asked ("an empty volume was
// asked"), not recorded, the plugin's volume left alone.
// Found by helper review81 (clone).
func TestEmptyVolumeAnsweredPrePopulatedFromASnapshotIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: withContentSource(&csipb.VolumeContentSource{
		Type: &csipb.VolumeContentSource_Snapshot{Snapshot: &csipb.VolumeContentSource_SnapshotSource{}}})})
	_, err := h.e.CreateVolume(h.ctx, volume("fresh"))
	ext := ""
	if vols := h.mem.Volumes(); len(vols) == 1 {
		ext = vols[0].ID
	}
	h.refusedCreate(err, "fresh", ext, "pre-populated", "an empty volume was asked")
}

// TestRestoreAnsweredAsACloneOfAnUnnamedVolumeIsRefused: a restore (snapshot_id) answered with
// a volume whose content_source says it was pre-populated from a volume (a clone: that volume's
// data as it is now, not the snapshot's), its volume_id left empty. createdVolume reads an empty
// ID as no source and records the volume as restored from the snapshot, "created": the data is
// not the point in time the user asked for. An answer naming any volume for a restore is
// refused as another source; one whose ID is left out says as much. Correct: refused, not
// recorded as the restore.
// Found by helper review81 (clone).
func TestRestoreAnsweredAsACloneOfAnUnnamedVolumeIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	snap, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: withContentSource(&csipb.VolumeContentSource{
		Type: &csipb.VolumeContentSource_Volume{Volume: &csipb.VolumeContentSource_VolumeSource{}}})})
	sv := volume("restored")
	sv.SnapshotID = snap.ID
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Fatalf("restore from snapshot %q answered with volume %q pre-populated from a volume (a clone, its ID left out): recorded as volume %q (state %s, snapshot_id %q), nothing said; "+
			"want it refused as another source than the snapshot asked", snap.ID, v.ExternalID, v.ID, v.State, v.SnapshotID)
	}
	if !strings.Contains(err.Error(), "pre-populated") {
		t.Errorf("refused restore: %v; want it to say the answer was pre-populated from another source", err)
	}
}

// TestCloneOfAnotherPluginsVolumeNamesItsPlugin: `volume create` of a spec on plugin "mem" whose
// clone_id is "src", a volume volctl records through plugin "other" (another socket, another
// storage). cloneSource resolves a volctl ID only among the plugin's socket mates, so "src" is
// sent to mem as a storage ID, and the command fails with mem's NOT_FOUND and the hint "the
// snapshot or clone source does not exist; check snapshot_id or clone_id": the user checks,
// and `volctl volume status src` shows the volume there, ready. The refusal names the wrong
// cause, and its advice leads nowhere; and the word is sent to a plugin as a storage ID volctl
// knows to be another plugin's volume's name. Correct: refused before CreateVolume is sent,
// naming volume "src" as plugin "other"'s and that a clone is made through its source's own
// plugin (plugin_id = "other"), or clone_id a storage ID of plugin "mem".
// Found by helper review81 (clone).
func TestCloneOfAnotherPluginsVolumeNamesItsPlugin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	sock2, _ := csitest.Serve(t, csitest.WithServer(other))
	h.registerPlugin("other", sock2)
	sv := volume("src")
	sv.PluginID = "other"
	h.create(sv)
	c := volume("copy")
	c.CloneID = "src"
	v, err := h.e.CreateVolume(h.ctx, c)
	if err == nil {
		t.Fatalf("clone through plugin mem of volume src, plugin other's: created %q (%s)", v.ExternalID, v.State)
	}
	if !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("clone through plugin mem of volume \"src\", which volctl records through plugin \"other\": %v; "+
			"want the refusal to name volume src as plugin other's (a clone is made through its source's plugin), not the plugin's NOT_FOUND of a source that \"does not exist\"", err)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n > 0 {
		t.Errorf("CreateVolume sent to plugin mem %d time(s); want none: volctl knows src is plugin other's volume", n)
	}
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `plugin_id = "other"`) {
		t.Fatalf("refusal: %v; want an invalid spec, advising plugin_id = \"other\"", err)
	}
	// The advice, followed: the clone through src's own plugin is made.
	c.PluginID = "other"
	made, err := h.e.CreateVolume(h.ctx, c)
	if err != nil || made.State != "ready" {
		t.Fatalf("the clone created with plugin_id = \"other\", as the refusal advised: %+v, %v; want it created", made, err)
	}
	if n := other.CallCount(csi.RPCCreateVolume); n != 2 {
		t.Errorf("plugin other's CreateVolume calls: %d; want 2 (src, then its clone)", n)
	}
}
