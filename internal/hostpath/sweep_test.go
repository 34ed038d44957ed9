package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/hostpath"
)

// TestInterruptedCreatesLeaveNoDirectories: a create puts its directory in place before it saves
// the record, so the plugin killed in between (SIGKILL during CreateSnapshot, found by running
// volctl while killing its plugin at random: a snapshot directory the plugin listed nowhere and
// nothing removed) leaves a directory no record names and no CO was given the ID of. The next
// start removes such directories, of the names this plugin generates only; a recorded volume,
// and a directory of any other name, are left as they are.
func TestInterruptedCreatesLeaveNoDirectories(t *testing.T) {
	root := t.TempDir()
	cfg := hostpath.Config{Root: root, NodeID: "n1"}
	c := start(t, cfg)
	ctx := context.Background()
	v, err := c.ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "kept", VolumeCapabilities: []*csi.VolumeCapability{snw}})
	if err != nil {
		t.Fatal(err)
	}
	keptID := v.GetVolume().GetVolumeId()
	c.srv.Stop()

	orphans := []string{
		filepath.Join(root, "volumes", "vol-"+strings.Repeat("a", 24)),
		filepath.Join(root, "snapshots", "snap-"+strings.Repeat("b", 24)),
	}
	foreign := filepath.Join(root, "snapshots", "not-ours")
	for _, d := range append(orphans, foreign) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "data"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := hostpath.New(cfg); err != nil {
		t.Fatal(err)
	}
	for _, d := range orphans {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s, no record names it, is still there after a start (%v)", d, err)
		}
	}
	for _, d := range []string{foreign, filepath.Join(root, "volumes", keptID)} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed by a start: %v", d, err)
		}
	}
}
