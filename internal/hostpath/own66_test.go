package hostpath_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// volumesNamed are the IDs of the volume records on root named name.
func volumesNamed(t *testing.T, root, name string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "meta", "volumes"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !strings.HasPrefix(id, "vol-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, "meta", "volumes", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Name string `json:"name"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(string(b))), &rec) == nil && rec.Name == name {
			ids = append(ids, id)
		}
	}
	return ids
}

// existingVolume now re-reads the record of a volume it finds by name, and a volume the other
// process serving the root deleted is made again. But when the other process has made the
// name again itself (Nomad's plugin, after `nomad volume delete` and create of the same name),
// the first process, finding its own copy deleted, makes a SECOND volume under the name
// without looking at the records it holds no copy of: the root then holds two volumes named
// "data", each process answering CreateVolume "data" with its own. Snapshots were fixed for
// exactly this (learnSnapshots, TestSnapshotRemadeByTheOtherProcessIsNotMadeTwice); the
// docs say a CreateSnapshot whose name it "does not find (or finds deleted) reads the records
// it holds no copy of"; volumes were given the deleted half only. Found by helper review66.
func TestVolumeRemadeByTheOtherProcessIsNotMadeTwice(t *testing.T) {
	root := t.TempDir()
	cfg := hostpath.Config{Root: root, NodeID: "n1"}
	local, _ := startFake(t, cfg)
	nomad, _ := startFake(t, cfg)
	first := local.createVolume(t, "data")
	if _, err := nomad.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: first.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume through the other process: %v", err)
	}
	remade := nomad.createVolume(t, "data")
	again := local.createVolume(t, "data")
	named := volumesNamed(t, root, "data")
	if again.GetVolumeId() != remade.GetVolumeId() || len(named) != 1 {
		t.Fatalf("CreateVolume %q through the first process answered %s; the other process had made it again as %s; the root now holds %d volumes named %q: %v",
			"data", again.GetVolumeId(), remade.GetVolumeId(), len(named), "data", named)
	}
}

// outsideRoot compares path strings (as given, and with symlinks resolved) only. A root
// reached through a bind mount (an admin's `mount --bind /data/volctl /var/lib/volctl`, on a
// host whose mounts are shared, systemd's default) is the same directory under the bind's
// source, and a staging path inside it there passes: the bind mount made on it propagates to
// the root's own path, covering meta/ exactly as TestStagingInsideThePluginsRootIsRefused
// shows, every other volume then unknown to the plugin. The docs promise staging paths
// "outside the plugin's root, as given or resolved". Found by helper review66.
func TestStagingInsideTheRootThroughItsBindSourceIsRefused(t *testing.T) {
	base := hostpathtest.Tmpfs(t, "size=16m")
	mustOK(t, unix.Mount("", base, "", unix.MS_SHARED, ""))
	src, bound := filepath.Join(base, "data"), filepath.Join(base, "lib")
	mustOK(t, os.Mkdir(src, 0o755))
	mustOK(t, os.Mkdir(bound, 0o755))
	mustOK(t, unix.Mount(src, bound, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = hostpath.UnmountAll(src); _ = hostpath.UnmountAll(bound) })
	root := filepath.Join(bound, "root") // as the admin gives --root
	c := start(t, hostpath.Config{Root: root})
	v := c.createVolume(t, "data")
	other := c.createVolume(t, "other")

	staging := filepath.Join(src, "root", "meta") // the root's meta/, through the bind's source
	err := c.stage(v, paths{staging: staging}, nil)
	if err != nil {
		if code := status.Code(err); code != codes.InvalidArgument && code != codes.FailedPrecondition {
			t.Fatalf("NodeStageVolume at %s: %v, want INVALID_ARGUMENT or FAILED_PRECONDITION", staging, err)
		}
		return
	}
	_, verr := c.ctl.ValidateVolumeCapabilities(context.Background(), &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: other.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{snw},
	})
	t.Errorf("NodeStageVolume at %s, the plugin's %s/meta through the bind mount's source, answered OK; %s/meta now shows the volume (records visible: %t); volume %s, untouched, is now: %v",
		staging, root, root, exists(filepath.Join(root, "meta", "volumes")), other.GetVolumeId(), verr)
}
