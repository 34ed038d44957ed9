package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/buildinfo"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

func TestIdentity(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	info, err := c.id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	mustOK(t, err)
	if info.GetName() != "hostpath.csi.volctl.dev" || info.GetVendorVersion() != buildinfo.Version {
		t.Errorf("GetPluginInfo = %q %q", info.GetName(), info.GetVendorVersion())
	}
	probe, err := c.id.Probe(ctx, &csi.ProbeRequest{})
	mustOK(t, err)
	if !probe.GetReady().GetValue() {
		t.Error("Probe: not ready")
	}
}

func TestControllerCapabilities(t *testing.T) {
	for _, attach := range []bool{false, true} {
		c := start(t, hostpath.Config{EnableAttach: attach})
		resp, err := c.ctl.ControllerGetCapabilities(context.Background(), &csi.ControllerGetCapabilitiesRequest{})
		mustOK(t, err)
		var got []csi.ControllerServiceCapability_RPC_Type
		for _, cp := range resp.GetCapabilities() {
			got = append(got, cp.GetRpc().GetType())
		}
		if slices.Contains(got, csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) != attach ||
			slices.Contains(got, csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES) != attach {
			t.Errorf("attach=%t: capabilities %v", attach, got)
		}
		for _, want := range []csi.ControllerServiceCapability_RPC_Type{
			csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME, csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
			csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS, csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
			csi.ControllerServiceCapability_RPC_CLONE_VOLUME, csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
			csi.ControllerServiceCapability_RPC_GET_CAPACITY,
		} {
			if !slices.Contains(got, want) {
				t.Errorf("attach=%t: missing %v in %v", attach, want, got)
			}
		}
		if !attach {
			_, err := c.ctl.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{VolumeId: "x", NodeId: "node-1", VolumeCapability: snw})
			wantCode(t, err, codes.Unimplemented, "--enable-attach")
		}
	}
}

func TestCreateVolumeIdempotency(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	first := c.createVolume(t, "db")
	if first.GetCapacityBytes() != mib {
		t.Errorf("capacity %d, want %d", first.GetCapacityBytes(), mib)
	}
	if got := first.GetAccessibleTopology(); len(got) != 1 || got[0].GetSegments()[hostpath.TopologyKey] != "node-1" {
		t.Errorf("accessible topology %v", got)
	}
	snap, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: first.GetVolumeId()})
	mustOK(t, err)

	fromSnap := &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}
	tests := []struct {
		name     string
		mutate   func(*csi.CreateVolumeRequest)
		wantCode codes.Code
		wantMsg  string
	}{
		{"same request", func(*csi.CreateVolumeRequest) {}, codes.OK, ""},
		{"range that includes the size", func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{RequiredBytes: mib / 2, LimitBytes: 2 * mib}
		}, codes.OK, ""},
		{"larger capacity", func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{RequiredBytes: 2 * mib}
		}, codes.AlreadyExists, "capacity"},
		{"smaller limit", func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{LimitBytes: mib / 2}
		}, codes.AlreadyExists, "capacity"},
		{"different parameters", func(r *csi.CreateVolumeRequest) {
			r.Parameters = map[string]string{"tier": "fast"}
		}, codes.AlreadyExists, "parameters"},
		{"different content source", func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource = fromSnap
		}, codes.AlreadyExists, "content source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := createReq("db", mib)
			tt.mutate(req)
			resp, err := c.ctl.CreateVolume(ctx, req)
			if tt.wantCode != codes.OK {
				wantCode(t, err, tt.wantCode, tt.wantMsg)
				return
			}
			mustOK(t, err)
			if resp.GetVolume().GetVolumeId() != first.GetVolumeId() {
				t.Errorf("got volume %q, want the existing %q", resp.GetVolume().GetVolumeId(), first.GetVolumeId())
			}
		})
	}
}

func TestCreateVolumeInvalid(t *testing.T) {
	c := start(t, hostpath.Config{})
	block := &csi.VolumeCapability{
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
	}
	tests := []struct {
		name string
		req  *csi.CreateVolumeRequest
		code codes.Code
		msg  string
	}{
		{"no name", &csi.CreateVolumeRequest{VolumeCapabilities: []*csi.VolumeCapability{snw}}, codes.InvalidArgument, "name is required"},
		{"no capabilities", &csi.CreateVolumeRequest{Name: "a"}, codes.InvalidArgument, "volume_capabilities"},
		{"block", &csi.CreateVolumeRequest{Name: "a", VolumeCapabilities: []*csi.VolumeCapability{block}}, codes.InvalidArgument, "block volumes are not supported"},
		{"no access type", &csi.CreateVolumeRequest{Name: "a", VolumeCapabilities: []*csi.VolumeCapability{{
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}}, codes.InvalidArgument, "access type"},
		{"split single-node mode", &csi.CreateVolumeRequest{Name: "a", VolumeCapabilities: []*csi.VolumeCapability{
			mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)}}, codes.InvalidArgument, "SINGLE_NODE_SINGLE_WRITER"},
		{"limit below required", &csi.CreateVolumeRequest{Name: "a", VolumeCapabilities: []*csi.VolumeCapability{snw},
			CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * mib, LimitBytes: mib}}, codes.InvalidArgument, "limit"},
		{"negative capacity", &csi.CreateVolumeRequest{Name: "a", VolumeCapabilities: []*csi.VolumeCapability{snw},
			CapacityRange: &csi.CapacityRange{RequiredBytes: -1}}, codes.InvalidArgument, "negative"},
		{"unknown snapshot", &csi.CreateVolumeRequest{Name: "a", VolumeCapabilities: []*csi.VolumeCapability{snw},
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
				Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "../../etc"}}}}, codes.NotFound, "snapshot"},
		{"unknown volume", &csi.CreateVolumeRequest{Name: "a", VolumeCapabilities: []*csi.VolumeCapability{snw},
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
				Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "vol-nope"}}}}, codes.NotFound, "vol-nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.ctl.CreateVolume(context.Background(), tt.req)
			wantCode(t, err, tt.code, tt.msg)
		})
	}
}

func TestCreateVolumeTopology(t *testing.T) {
	c := start(t, hostpath.Config{NodeID: "n1"})
	here := &csi.Topology{Segments: map[string]string{hostpath.TopologyKey: "n1"}}
	there := &csi.Topology{Segments: map[string]string{hostpath.TopologyKey: "n2"}}
	zone := &csi.Topology{Segments: map[string]string{"zone": "a"}}
	tests := []struct {
		name string
		req  *csi.TopologyRequirement
		code codes.Code
	}{
		{"requisite includes this node", &csi.TopologyRequirement{Requisite: []*csi.Topology{there, here}}, codes.OK},
		{"requisite and preferred", &csi.TopologyRequirement{Requisite: []*csi.Topology{here}, Preferred: []*csi.Topology{here}}, codes.OK},
		{"preferred elsewhere only", &csi.TopologyRequirement{Preferred: []*csi.Topology{there}}, codes.OK},
		{"requisite elsewhere", &csi.TopologyRequirement{Requisite: []*csi.Topology{there}}, codes.ResourceExhausted},
		{"requisite with an unknown segment", &csi.TopologyRequirement{Requisite: []*csi.Topology{zone}}, codes.ResourceExhausted},
		{"preferred not in requisite", &csi.TopologyRequirement{Requisite: []*csi.Topology{here}, Preferred: []*csi.Topology{there}}, codes.InvalidArgument},
		{"empty requirement", &csi.TopologyRequirement{}, codes.InvalidArgument},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := createReq("topo-"+string(rune('a'+i)), mib)
			req.AccessibilityRequirements = tt.req
			_, err := c.ctl.CreateVolume(context.Background(), req)
			if tt.code == codes.OK {
				mustOK(t, err)
				return
			}
			wantCode(t, err, tt.code)
		})
	}
}

func TestDeleteVolume(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	v := c.createVolume(t, "gone")
	dir := c.volumeDir(t, v.GetVolumeId())
	for range 2 { // the second delete finds nothing and succeeds
		_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
		mustOK(t, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("volume directory still there: %v", err)
	}

	// An ID that is a path must not reach the filesystem.
	bait := filepath.Join(c.srv.Config.Root, "bait")
	mustOK(t, os.Mkdir(bait, 0o700))
	_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "../bait"})
	mustOK(t, err)
	if _, err := os.Stat(bait); err != nil {
		t.Errorf("DeleteVolume of \"../bait\" touched the filesystem: %v", err)
	}
	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{})
	wantCode(t, err, codes.InvalidArgument, "volume_id")
}

func TestSnapshotAndCloneCopyContent(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	src := c.createVolume(t, "src")
	srcDir := c.volumeDir(t, src.GetVolumeId())
	mustOK(t, os.MkdirAll(filepath.Join(srcDir, "sub"), 0o755))
	mustOK(t, os.WriteFile(filepath.Join(srcDir, "sub", "data"), []byte("v1"), 0o640))
	mustOK(t, os.Symlink("sub/data", filepath.Join(srcDir, "link")))

	snap, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s1", SourceVolumeId: src.GetVolumeId()})
	mustOK(t, err)
	sn := snap.GetSnapshot()
	if !sn.GetReadyToUse() || sn.GetSourceVolumeId() != src.GetVolumeId() || sn.GetSizeBytes() != mib || sn.GetCreationTime() == nil {
		t.Errorf("snapshot %v", sn)
	}
	// Changing the source afterwards must not change the snapshot.
	mustOK(t, os.WriteFile(filepath.Join(srcDir, "sub", "data"), []byte("v2"), 0o640))

	restoreReq := createReq("restored", 0)
	restoreReq.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: sn.GetSnapshotId()}}}
	restored, err := c.ctl.CreateVolume(ctx, restoreReq)
	mustOK(t, err)
	if restored.GetVolume().GetContentSource().GetSnapshot().GetSnapshotId() != sn.GetSnapshotId() {
		t.Errorf("restored volume's content source %v", restored.GetVolume().GetContentSource())
	}
	if got := restored.GetVolume().GetCapacityBytes(); got != mib {
		t.Errorf("restored capacity %d, want the snapshot's %d", got, mib)
	}

	cloneReq := createReq("clone", 0)
	cloneReq.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
		Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.GetVolumeId()}}}
	clone, err := c.ctl.CreateVolume(ctx, cloneReq)
	mustOK(t, err)

	for _, tt := range []struct {
		id, want string
	}{
		{restored.GetVolume().GetVolumeId(), "v1"},
		{clone.GetVolume().GetVolumeId(), "v2"},
	} {
		dir := c.volumeDir(t, tt.id)
		got, err := os.ReadFile(filepath.Join(dir, "sub", "data"))
		mustOK(t, err)
		if string(got) != tt.want {
			t.Errorf("volume %s: data = %q, want %q", tt.id, got, tt.want)
		}
		if link, err := os.Readlink(filepath.Join(dir, "link")); err != nil || link != "sub/data" {
			t.Errorf("volume %s: symlink = %q, %v", tt.id, link, err)
		}
		if fi, err := os.Stat(filepath.Join(dir, "sub", "data")); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("volume %s: mode %v, %v", tt.id, fi.Mode(), err)
		}
	}

	// A source larger than the limit cannot fit.
	tooSmall := createReq("too-small", 0)
	tooSmall.CapacityRange = &csi.CapacityRange{LimitBytes: mib / 2}
	tooSmall.VolumeContentSource = restoreReq.VolumeContentSource
	_, err = c.ctl.CreateVolume(ctx, tooSmall)
	wantCode(t, err, codes.OutOfRange, "limit")

	// Snapshots are independent copies: the source volume can go first.
	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: src.GetVolumeId()})
	mustOK(t, err)
	snapDir, ok := c.srv.Plugin.SnapshotPath(sn.GetSnapshotId())
	if !ok {
		t.Fatal("snapshot gone with its source volume")
	}
	if got, err := os.ReadFile(filepath.Join(snapDir, "sub", "data")); err != nil || string(got) != "v1" {
		t.Errorf("snapshot data = %q, %v", got, err)
	}
}

func TestCreateSnapshotIdempotency(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	a, b := c.createVolume(t, "a"), c.createVolume(t, "b")
	s1, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: a.GetVolumeId()})
	mustOK(t, err)
	s2, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: a.GetVolumeId()})
	mustOK(t, err)
	if s1.GetSnapshot().GetSnapshotId() != s2.GetSnapshot().GetSnapshotId() {
		t.Errorf("same name and source gave two snapshots")
	}
	_, err = c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: b.GetVolumeId()})
	wantCode(t, err, codes.AlreadyExists, a.GetVolumeId())
	_, err = c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "t", SourceVolumeId: "vol-unknown"})
	wantCode(t, err, codes.NotFound, "vol-unknown")
	_, err = c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: a.GetVolumeId()})
	wantCode(t, err, codes.InvalidArgument, "name")
	for range 2 {
		_, err = c.ctl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: s1.GetSnapshot().GetSnapshotId()})
		mustOK(t, err)
	}
}

func TestListPagination(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	var vols, snaps []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		v := c.createVolume(t, name)
		vols = append(vols, v.GetVolumeId())
		s, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s-" + name, SourceVolumeId: v.GetVolumeId()})
		mustOK(t, err)
		snaps = append(snaps, s.GetSnapshot().GetSnapshotId())
	}
	slices.Sort(vols)
	slices.Sort(snaps)

	var got []string
	token := ""
	for pages := 0; ; pages++ {
		resp, err := c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 2, StartingToken: token})
		mustOK(t, err)
		if len(resp.GetEntries()) > 2 {
			t.Fatalf("page of %d entries, max 2", len(resp.GetEntries()))
		}
		for _, e := range resp.GetEntries() {
			got = append(got, e.GetVolume().GetVolumeId())
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if !slices.Equal(got, vols) {
		t.Errorf("paged volumes %v, want %v", got, vols)
	}

	// A volume deleted between pages neither breaks the token nor shifts the next page.
	first, err := c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 2})
	mustOK(t, err)
	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vols[1]})
	mustOK(t, err)
	rest, err := c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: first.GetNextToken()})
	mustOK(t, err)
	if len(rest.GetEntries()) != 3 || rest.GetEntries()[0].GetVolume().GetVolumeId() != vols[2] {
		t.Errorf("after a delete, the second page is %v", rest.GetEntries())
	}

	_, err = c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: "invalid-token"})
	wantCode(t, err, codes.Aborted, "starting_token")
	_, err = c.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: "invalid-token"})
	wantCode(t, err, codes.Aborted, "starting_token")
	_, err = c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: -1})
	wantCode(t, err, codes.InvalidArgument, "max_entries")

	page, err := c.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: 3})
	mustOK(t, err)
	rest2, err := c.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: page.GetNextToken()})
	mustOK(t, err)
	if n := len(page.GetEntries()) + len(rest2.GetEntries()); n != 5 || rest2.GetNextToken() != "" {
		t.Errorf("snapshot pages hold %d entries, want 5", n)
	}

	byID, err := c.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snaps[3]})
	mustOK(t, err)
	if len(byID.GetEntries()) != 1 || byID.GetEntries()[0].GetSnapshot().GetSnapshotId() != snaps[3] {
		t.Errorf("filter by snapshot ID: %v", byID.GetEntries())
	}
	bySource, err := c.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SourceVolumeId: vols[0]})
	mustOK(t, err)
	if len(bySource.GetEntries()) != 1 || bySource.GetEntries()[0].GetSnapshot().GetSourceVolumeId() != vols[0] {
		t.Errorf("filter by source volume: %v", bySource.GetEntries())
	}
	none, err := c.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: "snap-none"})
	mustOK(t, err)
	if len(none.GetEntries()) != 0 {
		t.Errorf("unknown snapshot ID listed %v", none.GetEntries())
	}
}

func TestControllerExpandVolume(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	v := c.createVolume(t, "grow")
	resp, err := c.ctl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
		VolumeId: v.GetVolumeId(), CapacityRange: &csi.CapacityRange{RequiredBytes: 3 * mib}})
	mustOK(t, err)
	if resp.GetCapacityBytes() != 3*mib || !resp.GetNodeExpansionRequired() {
		t.Errorf("expand: %v", resp)
	}
	list, err := c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	mustOK(t, err)
	if got := list.GetEntries()[0].GetVolume().GetCapacityBytes(); got != 3*mib {
		t.Errorf("listed capacity %d after expansion, want %d", got, 3*mib)
	}
	_, err = c.ctl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
		VolumeId: v.GetVolumeId(), CapacityRange: &csi.CapacityRange{RequiredBytes: mib, LimitBytes: 2 * mib}})
	wantCode(t, err, codes.OutOfRange, "shrink")
	_, err = c.ctl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: v.GetVolumeId()})
	wantCode(t, err, codes.InvalidArgument, "capacity_range")
	_, err = c.ctl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
		VolumeId: "vol-unknown", CapacityRange: &csi.CapacityRange{RequiredBytes: mib}})
	wantCode(t, err, codes.NotFound)
}

func TestGetCapacity(t *testing.T) {
	c := start(t, hostpath.Config{NodeID: "n1"})
	ctx := context.Background()
	resp, err := c.ctl.GetCapacity(ctx, &csi.GetCapacityRequest{VolumeCapabilities: []*csi.VolumeCapability{snw}})
	mustOK(t, err)
	if resp.GetAvailableCapacity() <= 0 {
		t.Errorf("available capacity %d", resp.GetAvailableCapacity())
	}
	elsewhere, err := c.ctl.GetCapacity(ctx, &csi.GetCapacityRequest{
		AccessibleTopology: &csi.Topology{Segments: map[string]string{hostpath.TopologyKey: "n2"}}})
	mustOK(t, err)
	if elsewhere.GetAvailableCapacity() != 0 {
		t.Errorf("capacity on another node %d, want 0", elsewhere.GetAvailableCapacity())
	}
}

func TestValidateVolumeCapabilities(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	v := c.createVolume(t, "v")
	ok, err := c.ctl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: v.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{snw}})
	mustOK(t, err)
	if len(ok.GetConfirmed().GetVolumeCapabilities()) != 1 {
		t.Errorf("not confirmed: %v", ok)
	}
	block := &csi.VolumeCapability{
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
	}
	no, err := c.ctl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: v.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{block}})
	mustOK(t, err)
	if no.GetConfirmed() != nil || no.GetMessage() == "" {
		t.Errorf("block capability confirmed: %v", no)
	}
	_, err = c.ctl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: "vol-unknown", VolumeCapabilities: []*csi.VolumeCapability{snw}})
	wantCode(t, err, codes.NotFound)
}

func TestStateSurvivesRestart(t *testing.T) {
	cfg := hostpath.Config{Root: filepath.Join(hostpathtest.MountDir(t), "root"), NodeID: "n1", EnableAttach: true}
	ctx := context.Background()

	c := start(t, cfg)
	v := c.createVolume(t, "keep")
	s, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "keep-snap", SourceVolumeId: v.GetVolumeId()})
	mustOK(t, err)
	pub, err := c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	mustOK(t, c.srv.Stop())

	c = start(t, cfg)
	vols, err := c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	mustOK(t, err)
	if len(vols.GetEntries()) != 1 || vols.GetEntries()[0].GetVolume().GetVolumeId() != v.GetVolumeId() {
		t.Fatalf("volumes after restart: %v", vols.GetEntries())
	}
	snaps, err := c.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	mustOK(t, err)
	if len(snaps.GetEntries()) != 1 || snaps.GetEntries()[0].GetSnapshot().GetSnapshotId() != s.GetSnapshot().GetSnapshotId() {
		t.Fatalf("snapshots after restart: %v", snaps.GetEntries())
	}
	again, err := c.ctl.CreateVolume(ctx, createReq("keep", mib))
	mustOK(t, err)
	if again.GetVolume().GetVolumeId() != v.GetVolumeId() {
		t.Errorf("CreateVolume after restart made a new volume %q", again.GetVolume().GetVolumeId())
	}
	// The attachment survived too: publishing again hands out the same context.
	pub2, err := c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	if pub2.GetPublishContext()[hostpath.PublishContextAttachment] != pub.GetPublishContext()[hostpath.PublishContextAttachment] {
		t.Errorf("publish context changed across a restart: %v vs %v", pub2.GetPublishContext(), pub.GetPublishContext())
	}
}

func TestControllerPublish(t *testing.T) {
	c := start(t, hostpath.Config{NodeID: "n1", EnableAttach: true, MaxVolumes: 2})
	ctx := context.Background()
	var ids []string
	for _, name := range []string{"a", "b", "c"} {
		ids = append(ids, c.createVolume(t, name).GetVolumeId())
	}
	publish := func(id, node string) (*csi.ControllerPublishVolumeResponse, error) {
		return c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: node, VolumeCapability: snw})
	}
	r1, err := publish(ids[0], "n1")
	mustOK(t, err)
	if r1.GetPublishContext()[hostpath.PublishContextNode] != "n1" || r1.GetPublishContext()[hostpath.PublishContextAttachment] == "" {
		t.Errorf("publish context %v", r1.GetPublishContext())
	}
	_, err = publish(ids[1], "n1")
	mustOK(t, err)
	_, err = publish(ids[0], "n1") // idempotent, and does not count twice
	mustOK(t, err)
	_, err = publish(ids[2], "n1")
	wantCode(t, err, codes.ResourceExhausted, "max volumes 2")
	_, err = publish(ids[2], "n2")
	wantCode(t, err, codes.NotFound, "n2")
	_, err = publish("vol-unknown", "n1")
	wantCode(t, err, codes.NotFound, "vol-unknown")

	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: ids[0]})
	wantCode(t, err, codes.FailedPrecondition, "published to node")

	for range 2 {
		_, err = c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: ids[0], NodeId: "n1"})
		mustOK(t, err)
	}
	_, err = c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: "vol-unknown", NodeId: "n1"})
	mustOK(t, err)
	_, err = publish(ids[2], "n1")
	mustOK(t, err)
	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: ids[0]})
	mustOK(t, err)
}

// With --enable-attach, ListVolumes names the nodes each volume is attached to
// (LIST_VOLUMES_PUBLISHED_NODES): an orchestrator that did not make an attachment (another volctl
// state dir on this plugin) sees it before its ControllerPublishVolume, which answers OK for it.
func TestListVolumesNamesTheNodesAVolumeIsAttachedTo(t *testing.T) {
	ctx := context.Background()
	c := start(t, hostpath.Config{NodeID: "n1", EnableAttach: true})
	v, w := c.createVolume(t, "v"), c.createVolume(t, "w")
	_, err := c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	resp, err := c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	mustOK(t, err)
	got := map[string][]string{}
	for _, e := range resp.GetEntries() {
		got[e.GetVolume().GetVolumeId()] = e.GetStatus().GetPublishedNodeIds()
	}
	if !slices.Equal(got[v.GetVolumeId()], []string{"n1"}) || len(got[w.GetVolumeId()]) != 0 || len(got) != 2 {
		t.Errorf("published nodes = %v, want %s on n1 and %s on none", got, v.GetVolumeId(), w.GetVolumeId())
	}
}
