package hostpath_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/iostreams"
)

// swapper keeps replacing, one atomic rename at a time, each of a volume's entries with a
// symlink to a file (or directory) outside it and back again, as a consumer of the volume may:
// its directory is 0777, reached through the consumer's bind mount.
type swapper struct {
	stop chan struct{}
	done sync.WaitGroup
}

func startSwapper(t *testing.T, dir string, n int, outsideFile, outsideDir string) *swapper {
	t.Helper()
	s := &swapper{stop: make(chan struct{})}
	for i := range n {
		file, sub := filepath.Join(dir, fmt.Sprintf("f%d", i)), filepath.Join(dir, fmt.Sprintf("d%d", i))
		mustOK(t, os.WriteFile(file, []byte("mine"), 0o644))
		mustOK(t, os.Mkdir(sub, 0o755))
		mustOK(t, os.WriteFile(filepath.Join(sub, filepath.Base(outsideFile)), []byte("mine"), 0o644))
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			tmpLink, tmpFile, subLink := file+".l", file+".r", sub+".l"
			_ = os.Symlink(outsideDir, subLink)
			for {
				select {
				case <-s.stop:
					return
				default:
				}
				// The entry is a symlink outside, then a regular file (a directory) again.
				_ = os.Symlink(outsideFile, tmpLink)
				_ = os.Rename(tmpLink, file)
				_ = os.WriteFile(tmpFile, []byte("mine"), 0o644)
				_ = os.Rename(tmpFile, file)
				_ = unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, subLink, unix.RENAME_EXCHANGE)
				_ = unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, subLink, unix.RENAME_EXCHANGE)
			}
		}()
	}
	t.Cleanup(s.halt)
	return s
}

func (s *swapper) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.done.Wait()
}

// holdsContent names a regular file under dir whose content is want ("" for none).
func holdsContent(t *testing.T, dir string, want []byte) string {
	t.Helper()
	found := ""
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found != "" || !d.Type().IsRegular() {
			return err
		}
		if got, err := os.ReadFile(path); err == nil && bytes.Equal(got, want) {
			found = path
		}
		return nil
	})
	mustOK(t, err)
	return found
}

// A consumer of a volume swaps its entries for symlinks to a root-only file and back while the
// plugin, as root, snapshots the volume: the snapshot must hold the symlinks, never the
// content of what they pointed to, nor a file or directory the consumer did not make.
func TestSnapshotDoesNotFollowASymlinkSwappedInWhileCopying(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	src := c.createVolume(t, "src")
	srcDir := c.volumeDir(t, src.GetVolumeId())

	outside := t.TempDir()
	secret := []byte("root-only content outside the volume")
	outsideFile := filepath.Join(outside, "secret")
	mustOK(t, os.WriteFile(outsideFile, secret, 0o600))
	s := startSwapper(t, srcDir, 8, outsideFile, outside)

	deadline := time.Now().Add(5 * time.Second)
	snapshots, failed := 0, 0
	var firstErr error
	for i := 0; snapshots < 30 && time.Now().Before(deadline); i++ {
		resp, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: fmt.Sprintf("s%d", i), SourceVolumeId: src.GetVolumeId()})
		if err != nil {
			// Said after the loop: what the copy may have leaked matters first.
			if failed++; firstErr == nil {
				firstErr = err
			}
			continue
		}
		id := resp.GetSnapshot().GetSnapshotId()
		dir, ok := c.srv.Plugin.SnapshotPath(id)
		if !ok {
			t.Fatalf("snapshot %s has no directory", id)
		}
		if leaked := holdsContent(t, dir, secret); leaked != "" {
			t.Fatalf("snapshot %d: %s holds the content of %s, which the volume only linked to (the copy followed a symlink swapped in under it)", snapshots, leaked, outsideFile)
		}
		_, err = c.ctl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id})
		mustOK(t, err)
		snapshots++
	}
	s.halt()
	if failed > 0 {
		t.Errorf("%d of %d CreateSnapshot calls failed while the volume's entries changed under the copy, the first: %v", failed, failed+snapshots, firstErr)
	}
	t.Logf("%d snapshots taken while the volume's entries were swapped", snapshots)
}

// publishedBesideATree is a plugin whose mounts are only bookkept with a volume v staged and
// published at p, and a directory outside holding n empty files, a tree the volume's stats must
// not count.
func publishedBesideATree(t *testing.T, n int) (c *client, v *csi.Volume, p paths, outside string) {
	t.Helper()
	c, _ = startFake(t, hostpath.Config{})
	v, p = c.staged(t, "v")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	outside = t.TempDir()
	for i := range n {
		mustOK(t, os.WriteFile(filepath.Join(outside, fmt.Sprintf("x%d", i)), nil, 0o600))
	}
	return c, v, p, outside
}

// The stats of a volume a consumer swaps a directory of for a symlink to a large tree outside
// it are the volume's own: the walk does not follow the symlink into the other tree.
func TestVolumeStatsDoNotFollowASymlinkSwappedIn(t *testing.T) {
	const outsideFiles = 2000
	c, v, p, outside := publishedBesideATree(t, outsideFiles)
	ctx := context.Background()
	outsideFile := filepath.Join(outside, "x0")
	// The volume holds its directory and, per swapped entry, at most six more: f, f.l, f.r, d,
	// d.l and the file in d.
	const entries = 8
	const most = 1 + 6*entries
	s := startSwapper(t, c.volumeDir(t, v.GetVolumeId()), entries, outsideFile, outside)

	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		stats, err := c.nd.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.GetVolumeId(), VolumePath: p.target})
		mustOK(t, err)
		for _, u := range stats.GetUsage() {
			if u.GetUnit() == csi.VolumeUsage_INODES && u.GetUsed() > most {
				t.Fatalf("call %d: %d inodes used, more than the volume's %d at most: the walk followed a symlink to %s (%d files)", i, u.GetUsed(), most, outside, outsideFiles)
			}
		}
	}
	s.halt()
}

// mountInside mounts, inside a volume's directory dir, as a consumer of the volume may (a
// privileged one, or through its target with shared propagation): a tmpfs holding a file at
// dir/tmpfs, and outside, a directory of the same file system as the volume's, bound at
// dir/bind. Both are unmounted when the test ends.
func mountInside(t *testing.T, dir, outside string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting inside a volume needs root")
	}
	bind, tmpfs := filepath.Join(dir, "bind"), filepath.Join(dir, "tmpfs")
	mustOK(t, os.Mkdir(bind, 0o755))
	mustOK(t, os.Mkdir(tmpfs, 0o755))
	mustOK(t, unix.Mount(outside, bind, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(bind, unix.MNT_DETACH) })
	mustOK(t, unix.Mount("tmpfs", tmpfs, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(tmpfs, unix.MNT_DETACH) })
	mustOK(t, os.WriteFile(filepath.Join(tmpfs, "other-fs"), []byte("on another file system"), 0o644))
}

// A consumer mounts, inside its volume's directory, a directory from outside it (the host's /,
// say, with root-only files and other volumes in it) and a file system of its own. A snapshot
// of the volume holds the volume's files, not what is mounted in it, and the plugin says which
// mounts it left out.
func TestSnapshotStaysOnTheVolumesMount(t *testing.T) {
	log := &iostreams.SyncBuffer{}
	c := start(t, hostpath.Config{Logger: slog.New(slog.NewTextHandler(log, nil))})
	ctx := context.Background()
	src := c.createVolume(t, "src")
	srcDir := c.volumeDir(t, src.GetVolumeId())
	mustOK(t, os.WriteFile(filepath.Join(srcDir, "mine"), []byte("mine"), 0o644))

	outside := t.TempDir()
	secret := []byte("root-only content outside the volume")
	mustOK(t, os.WriteFile(filepath.Join(outside, "secret"), secret, 0o600))
	mountInside(t, srcDir, outside)

	resp, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: src.GetVolumeId()})
	mustOK(t, err)
	dir, ok := c.srv.Plugin.SnapshotPath(resp.GetSnapshot().GetSnapshotId())
	if !ok {
		t.Fatal("the snapshot has no directory")
	}
	if leaked := holdsContent(t, dir, secret); leaked != "" {
		t.Errorf("%s holds the content of %s, bind-mounted inside the volume: the copy crossed into another mount", leaked, filepath.Join(outside, "secret"))
	}
	if leaked := holdsContent(t, dir, []byte("on another file system")); leaked != "" {
		t.Errorf("%s holds a file of the tmpfs mounted inside the volume: the copy crossed into another file system", leaked)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "mine")); err != nil || string(got) != "mine" {
		t.Errorf("the snapshot's copy of the volume's own file: %q, %v", got, err)
	}
	for _, m := range []string{"bind", "tmpfs"} {
		if said := log.String(); !strings.Contains(said, "mount="+filepath.Join(srcDir, m)) || !strings.Contains(said, "left out of its copy") {
			t.Errorf("the plugin's log does not say the mount at %s was left out of the copy:\n%s", filepath.Join(srcDir, m), said)
		}
	}
}

// The stats of a volume with a tree bound inside it count the volume's own files only.
func TestVolumeStatsStayOnTheVolumesMount(t *testing.T) {
	const outsideFiles = 500
	c, v, p, outside := publishedBesideATree(t, outsideFiles)
	ctx := context.Background()
	mountInside(t, c.volumeDir(t, v.GetVolumeId()), outside)
	stats, err := c.nd.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.GetVolumeId(), VolumePath: p.target})
	mustOK(t, err)
	const most = 3 // the volume's directory and the two mount points in it, counted or not
	for _, u := range stats.GetUsage() {
		if u.GetUnit() == csi.VolumeUsage_INODES && u.GetUsed() > most {
			t.Errorf("%d inodes used, more than the volume's %d: the walk counted what is mounted inside it (%d files bound from %s)", u.GetUsed(), most, outsideFiles, outside)
		}
	}
}
