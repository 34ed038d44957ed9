package csi

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// TestContentSourceSpelledOtherwiseIsTheSourceAsked: a plugin that reads IDs
// regardless of case and reports them canonically answers a clone of "vol-1" (or a restore
// from "snap-1") with the volume it made for this request, its content source naming the source
// asked as "VOL-1" ("SNAP-1"): the very source, in another spelling (spec.SameStorageID), which
// volctl takes for the same storage everywhere else (an answer naming the clone's source so is
// refused as that source; a snapshot listed with its source so is not "source gone"). The
// content source was compared exactly: the answer was refused as "pre-populated from volume
// \"VOL-1\", where one from volume \"vol-1\" was asked" and returned without the volume, which
// the engine therefore neither recorded nor deleted: the clone made under the create's name was
// left on the plugin tracked by nothing, and each create again (a new CSI name) left another.
// Found by helper review70.
func TestContentSourceSpelledOtherwiseIsTheSourceAsked(t *testing.T) {
	for _, tc := range []struct {
		what string
		req  CreateVolumeRequest
		src  *csipb.VolumeContentSource
	}{
		{"clone", CreateVolumeRequest{Name: "volctl-clone-1", CloneID: "vol-1"},
			&csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: "VOL-1"}}}},
		{"restore", CreateVolumeRequest{Name: "volctl-restored-1", SnapshotID: "snap-1"},
			&csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: "SNAP-1"}}}},
	} {
		resp := &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: "vol-2", CapacityBytes: 1 << 30, ContentSource: tc.src}}
		v, err := createdVolume(tc.req, resp)
		if err != nil {
			t.Errorf("%s answered with its source spelled otherwise in the content source: %v (volume returned to record or delete: %q)", tc.what, err, v.ID)
		}
	}
}
