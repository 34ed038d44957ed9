package hostpath_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// NodePublishVolume's directory check (Mounter.Shows) stats the staging path, which follows
// its topmost mount: with something mounted over the staging since it was staged (an admin's
// tmpfs, the case docs/architecture.md names for the teardowns), the volume's directory is
// unchanged, and the publish, a bind of that directory, would show the very tree the claims
// before it show. It is refused saying "the root moved, or the directory was made again", which
// is not so, and advising "unpublish its claims and unstage it (NodeUnstageVolume), then stage
// and publish it again": the unstage is refused (mountedOver: something is mounted over the
// volume). The advice names a step that fails, and the cause it names is not the one there.
// Found by helper review66.
func TestPublishWithSomethingMountedOverTheStagingIsNotCalledAMovedDirectory(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{NodeID: "n1"})
	v, p := c.staged(t, "over")
	t.Cleanup(func() { _ = hostpath.UnmountAll(p.staging) })
	dir := c.volumeDir(t, v.GetVolumeId())
	mustOK(t, os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644))
	// Something mounted over the staging since it was staged.
	if err := unix.Mount("tmpfs", p.staging, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(p.staging, unix.MNT_DETACH) })

	err := c.publish(v, p, p.target, false, nil)
	t.Cleanup(func() { _ = hostpath.UnmountAll(p.target) })
	if err == nil {
		if _, serr := os.Stat(filepath.Join(p.target, "data")); serr != nil {
			t.Errorf("publish answered OK but the target does not show the volume's directory: %v", serr)
		}
		return
	}
	if strings.Contains(err.Error(), "the root moved, or the directory was made again") {
		uerr := c.unstage(v, p)
		t.Errorf("NodePublishVolume with a tmpfs mounted over the staging (the volume's directory unchanged) is refused as a moved or remade directory:\n%v\n"+
			"the advised NodeUnstageVolume answers: %v", err, uerr)
	}
}

// hostpathtest.FakeMounter.Shows says it answers "as the system's does", but it compares the
// path the staging's mount was made from (volumes/<id>, a name) with that same name now: a
// volume directory made again at its name (renamed aside, made anew: the case
// TestPublishAfterTheVolumesDirectoryChangedShowsWhatTheStagingShows refuses with the system's
// mounter) is "shown" by the fake, and the publish answers OK. Every node test that runs without
// root (startFake) passes a publish the plugin refuses on a real host. Found by helper review66.
func TestFakeMounterShowsJudgesADirectoryMadeAgainAsTheSystemDoes(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{NodeID: "n1"})
	v, p := c.staged(t, "again")
	dir := c.volumeDir(t, v.GetVolumeId())
	mustOK(t, os.Rename(dir, dir+".aside"))
	mustOK(t, os.Mkdir(dir, 0o777))
	if err := c.publish(v, p, p.target, false, nil); err == nil {
		t.Errorf("with the fake mounter, a publish whose staging was made of a directory since renamed aside (another made at its name) answers OK; " +
			"the system's mounter refuses it (the staging shows another directory than the volume's now)")
	}
}
