package hostpath_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A target or a staging path something else was mounted over since the plugin mounted the
// volume there (an admin's tmpfs, a disk): NodeUnpublishVolume and NodeUnstageVolume unmounted
// the topmost mount, the other one, whose tmpfs and data went with it, then failed to remove
// the target ("device or resource busy"), and sent again unmounted the volume. What is mounted
// on top is now checked to be the volume's directory: anything else is refused, named, and
// left mounted, with what to do; unmounted by hand, the request succeeds.
func TestTeardownRefusesToUnmountWhatWasMountedOverTheVolume(t *testing.T) {
	hostpathtest.RequireMount(t)
	for _, which := range []string{"target", "staging"} {
		t.Run(which, func(t *testing.T) {
			c := start(t, hostpath.Config{})
			v, p := c.staged(t, "over-"+which)
			mustOK(t, c.publish(v, p, p.target, false, nil))
			path := p.target
			if which == "staging" {
				mustOK(t, c.unpublish(v, p.target))
				path = p.staging
			}
			if err := unix.Mount("someonesfs", path, "tmpfs", 0, "size=1m"); err != nil {
				t.Skipf("mounting a tmpfs: %v", err)
			}
			mustOK(t, os.WriteFile(filepath.Join(path, "theirs"), []byte("kept"), 0o600))

			var err error
			if which == "target" {
				err = c.unpublish(v, p.target)
			} else {
				err = c.unstage(v, p)
			}
			wantCode(t, err, codes.FailedPrecondition, path, "tmpfs someonesfs", "umount "+path)
			if b, rerr := os.ReadFile(filepath.Join(path, "theirs")); rerr != nil || string(b) != "kept" {
				t.Fatalf("what was mounted over the volume's %s: %q, %v; want it left mounted", which, b, rerr)
			}

			// Unmounted by hand, the request goes through.
			mustOK(t, unix.Unmount(path, 0))
			if which == "target" {
				mustOK(t, c.unpublish(v, p.target))
			}
			mustOK(t, c.unstage(v, p))
			if hostpathtest.Mounted(t, path) || hostpathtest.Mounted(t, p.staging) {
				t.Errorf("still mounted after the teardown")
			}
		})
	}
}

// The volume's directory removed by hand under its mounts (rm -rf of the root's volumes/ID)
// cannot be compared with what is mounted: the teardown unmounts as it did before the check,
// not refused for good.
func TestTeardownOfAVolumeWhoseDirectoryWasRemoved(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	v, p := c.staged(t, "removed")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	mustOK(t, os.RemoveAll(c.volumeDir(t, v.GetVolumeId())))
	mustOK(t, c.unpublish(v, p.target))
	mustOK(t, c.unstage(v, p))
	if hostpathtest.Mounted(t, p.target) || hostpathtest.Mounted(t, p.staging) {
		t.Errorf("still mounted after the teardown")
	}
}
