package hostpath_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// NodePublishVolume now bind-mounts the volume's directory (root/volumes/<id>) on the target,
// not the staging, checking only that the staging path is still a mount point. When the
// directory at that path is no longer the one staged (the root moved to another disk and the
// plugin restarted with --root there, as its own FAILED_PRECONDITION advises; the directory
// made again by hand or restored from a backup: the cases docs/architecture.md says the
// teardown must survive), a claim joining the staging is answered OK with a target showing
// another directory than the staging and the claims already published from it: two allocs of
// one volume, on one host, read and write two different trees, and what the first writes
// after the move the second never sees. Before, a target was a bind of the staging, and every
// claim saw what the staging shows. Either the target shows what the staging shows, or the
// publish is refused. Found by helper review66.
func TestPublishAfterTheVolumesDirectoryChangedShowsWhatTheStagingShows(t *testing.T) {
	hostpathtest.RequireMount(t)
	for _, how := range []string{"root-moved", "dir-made-again"} {
		t.Run(how, func(t *testing.T) {
			base := hostpathtest.MountDir(t)
			old := filepath.Join(base, "root")
			c := start(t, hostpath.Config{Root: old, NodeID: "n1"})
			v, p := c.staged(t, "split")
			mustOK(t, c.publish(v, p, p.target, false, nil))
			mustOK(t, os.WriteFile(filepath.Join(p.target, "before"), []byte("1"), 0o644))

			switch how {
			case "root-moved":
				mustOK(t, c.srv.Stop())
				moved := filepath.Join(hostpathtest.Tmpfs(t, "size=16m"), "root")
				if out, err := exec.Command("cp", "-a", old, moved).CombinedOutput(); err != nil {
					t.Fatalf("copying the root: %v: %s", err, out)
				}
				c = start(t, hostpath.Config{Root: moved, NodeID: "n1"})
			case "dir-made-again":
				dir := c.volumeDir(t, v.GetVolumeId())
				mustOK(t, os.Rename(dir, dir+".aside"))
				mustOK(t, os.Mkdir(dir, 0o777))
			}

			second := filepath.Join(filepath.Dir(p.target), "second")
			t.Cleanup(func() { _ = hostpath.UnmountAll(second) })
			if err := c.publish(v, p, second, false, nil); err != nil {
				t.Logf("NodePublishVolume of a second claim refused: %v (refused is fine)", err)
				return
			}
			// The first claim's alloc keeps writing.
			mustOK(t, os.WriteFile(filepath.Join(p.target, "after"), []byte("2"), 0o644))
			var st, sec, first devIno
			statOf(t, p.staging, &st)
			statOf(t, second, &sec)
			statOf(t, p.target, &first)
			_, err := os.Stat(filepath.Join(second, "after"))
			if sec != st || err != nil {
				t.Errorf("NodePublishVolume of a second claim answered OK, but its target %s shows another directory (dev/ino %v) than the staging %s (%v) and the first claim's target (%v): "+
					"a file the first claim wrote is not there (%v)", second, sec, p.staging, st, first, err)
			}
			_ = c.unpublish(v, second)
		})
	}
}

type devIno struct{ dev, ino uint64 }

func statOf(t *testing.T, path string, out *devIno) {
	t.Helper()
	fi, err := os.Stat(path)
	mustOK(t, err)
	s := fi.Sys().(*syscall.Stat_t)
	*out = devIno{uint64(s.Dev), uint64(s.Ino)}
}
