package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// otherNamespaceChildEnv, when set, is the state dir a re-executed test binary (in another mount
// namespace) claims volume "v" for alloc "b" on, saying what it got on stdout.
const otherNamespaceChildEnv = "VOLCTL_TEST_OTHER_NAMESPACE_DIR"

// otherNamespaceChild is the child's side: a second volctl process, in a mount namespace of its own
// that shares the state dir's mount (peer group) with the plugin's, as mountView admits and
// its refusal advises (`unshare --propagation unchanged`).
func otherNamespaceChild(t *testing.T, dir string) {
	ctx := context.Background()
	e, err := Open(ctx, Config{StateDir: dir, Mounts: kernelMounts{}, Retry: fastRetry,
		Timeouts: csi.Timeouts{Short: 5 * time.Second, Long: 5 * time.Second}})
	if err != nil {
		fmt.Printf("CHILD-OPEN-ERR: %v\n", err)
		return
	}
	defer e.Close()
	cl, err := e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	if err != nil {
		fmt.Printf("CHILD-CLAIM-ERR: %v\n", err)
		return
	}
	fmt.Printf("CHILD-CLAIM-OK: %s\n", cl.TargetPath)
	if _, err := e.Release(ctx, "v", "b"); err != nil {
		fmt.Printf("CHILD-RELEASE-ERR: %v\n", err)
	}
}

// TestJoinFromAnotherMountNamespaceSharingTheStateDir: the second version of the staging's check
// recorded the staging's mount ID, which is the ID of the mount in the namespace of the volctl
// that staged it: each mount namespace's copy of a mount has an ID of its own. A second volctl in
// another mount namespace that shares the state dir's mount (a peer group: mountView lets it act,
// and its refusal advises that set-up) found another ID at the staging: its claim joining the
// staging was refused, advising the release of every claim of the volume. What the mount shows
// (device and root) is the same through every namespace. Real mounts and namespaces, as root.
// Found by helper review71 (own3 review).
func TestJoinFromAnotherMountNamespaceSharingTheStateDir(t *testing.T) {
	if dir := os.Getenv(otherNamespaceChildEnv); dir != "" {
		otherNamespaceChild(t, dir)
		return
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1) to run a second volctl in another mount namespace")
	}
	h := kernelHarness(t, nil)
	// The state dir's mount shared, as docs/agent.md has a containerized plugin's state dir
	// (rshared): a bind of it onto itself, made shared.
	if err := unix.Mount(h.dir, h.dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(h.dir, unix.MNT_DETACH) })
	if err := unix.Mount("", h.dir, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	defer h.release("v", "a")

	cmd := exec.Command("unshare", "-m", "--propagation", "unchanged", os.Args[0],
		"-test.run", "^TestJoinFromAnotherMountNamespaceSharingTheStateDir$", "-test.count=1")
	cmd.Env = append(os.Environ(), otherNamespaceChildEnv+"="+h.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "CHILD-CLAIM-OK") {
		t.Fatalf("a claim of v from a second volctl in another mount namespace sharing the state dir's mount (admitted by mountView), "+
			"joining the staging the plugin made and alloc a is published from:\n%s\nwant it published: the staging is the one the volume was staged with, seen through another namespace's copy of the mount", out)
	}
}

// TestStagingReplacedByAMountWithTheReusedIDIsNotJoined: a staging unmounted since (a plugin
// restart that lost it, a umount by hand), and another file system mounted there, is replaced:
// a join must not publish from it. The second version of the check compared statx's
// STATX_MNT_ID, which the kernel hands out again, lowest free first: the new mount, the next one
// made, got the freed ID, and the join passed, the claim handed the other file system. What the
// mount shows (its device and root) is compared now; the refusal's advice is followed to a
// claim with the volume's data. Real mounts, as root. Found by helper review71 (own3 review).
func TestStagingReplacedByAMountWithTheReusedIDIsNotJoined(t *testing.T) {
	h := kernelHarness(t, nil)
	other := otherDataDir(t)
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"})
	if err := os.WriteFile(filepath.Join(a.TargetPath, "w-data"), []byte("w"), 0o600); err != nil {
		t.Fatal(err)
	}
	staging := stagingPath(h.dir, "mem", "w")
	if st, ok, err := h.e.getStaging(h.ctx, "w"); err != nil || !ok || st.MountRoot == "" {
		t.Fatalf("staging of w: %+v %v %v, want what its mount shows recorded", st, ok, err)
	}
	// The staging unmounted, and another file system mounted in its place.
	if err := unix.Unmount(staging, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(other, staging, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(staging, unix.MNT_DETACH) })

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	advised := "`umount " + staging + "`"
	if err == nil || !strings.Contains(err.Error(), advised) {
		t.Fatalf("claim of w joining its staging, replaced since by another file system: %v; want it refused, naming %s", err, advised)
	}
	if err := unix.Unmount(staging, 0); err != nil { // the advice: until nothing is mounted there,
		t.Fatalf("%s: %v", advised, err)
	}
	if !strings.Contains(err.Error(), "`volctl volume detach w`") {
		t.Fatalf("the refusal: %v\nwant it naming the release of the volume's claims (`volctl volume detach w`)", err)
	}
	if _, err := h.e.Detach(h.ctx, "w", false); err != nil { // then the volume's claims released,
		t.Fatalf("the advised `volctl volume detach w`: %v", err)
	}
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"}) // then claimed again
	if err != nil {
		t.Fatalf("claim of w after the advised %s: %v", advised, err)
	}
	defer h.release("w", "b")
	if _, err := os.Stat(filepath.Join(b.TargetPath, "w-data")); err != nil {
		t.Fatalf("claim of w after the advice: its target lacks w's data: %v", err)
	}
}

// TestStackedOverAStagingWithoutItsOwnMountIsNoStagingRefusal: a plugin that stages nothing at
// the staging path itself (MountTargetsOnly: it publishes from its own storage) had the mount
// holding the staging directory recorded as the one it was staged with (the state dir's file
// system), and a mount stacked over that directory since was refused as the staging "no longer
// showing the mount it was staged with", mount N still there below, advising a release that
// then failed on the stacked mount. Nothing is recorded for a staging path that is no mount point:
// the claim is published from the plugin's storage, as the staging path never was. Real
// mounts, as root. Found by helper review71 (own3 review).
func TestStackedOverAStagingWithoutItsOwnMountIsNoStagingRefusal(t *testing.T) {
	h := kernelHarness(t, func(c *csitest.MemConfig) { c.MountTargetsOnly = true })
	other := otherDataDir(t)
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"})
	defer h.release("w", "a")
	staging := stagingPath(h.dir, "mem", "w")
	if st, _, err := h.e.getStaging(h.ctx, "w"); err != nil || st.MountRoot != "" {
		t.Fatalf("staging of w, nothing mounted at its path: recorded %q (%v); want nothing recorded", st.MountRoot, err)
	}
	if err := unix.Mount(other, staging, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(staging, unix.MNT_DETACH) // before a's release unstages
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	if err != nil {
		t.Fatalf("claim joining w's staging, the plugin staging nothing at its path, something mounted there since: %v; want it published from the plugin's storage", err)
	}
	defer h.release("w", "b")
	if _, err := os.Stat(filepath.Join(b.TargetPath, "other-data")); err == nil {
		t.Fatalf("claim of w published at %s shows what was mounted over the staging path", b.TargetPath)
	}
}

// TestStagingTmpfsReplacedByAnotherTmpfsIsNotJoined: a plugin whose NodeStageVolume
// mounts a file system with an anonymous device at the staging path (tmpfs here; NFS, CephFS,
// FUSE and overlay alike) has that device recorded as what the staging shows. Once the
// staging's file system is gone from the host (its mounts unmounted: what a reboot, or a FUSE
// plugin's crash and the umount of its dead mounts, leaves) and another file system of that
// kind is mounted at the staging path, the kernel gives the new one the freed anonymous device
// number (lowest free first), and its root is "/" as the first one's was: a claim joining the
// staging compared equal and was published from the other file system. docs/architecture.md
// said the device is "not given to another file system as a freed mount ID is". Real mounts,
// as root. Found by helper review71 (own4 review).
func TestStagingTmpfsReplacedByAnotherTmpfsIsNotJoined(t *testing.T) {
	var stagings []string
	t.Cleanup(func() {
		for _, s := range stagings {
			for range 3 {
				_ = unix.Unmount(s, unix.MNT_DETACH)
			}
		}
	})
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.MakeStaging = func(staging string) error {
			stagings = append(stagings, staging)
			return unix.Mount("volctl-test-w", staging, "tmpfs", 0, "size=1m")
		}
	})
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"})
	t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "w", "a") })
	if err := os.WriteFile(filepath.Join(a.TargetPath, "w-data"), []byte("w"), 0o600); err != nil {
		t.Fatal(err)
	}
	staging := stagingPath(h.dir, "mem", "w")
	st, ok, err := h.e.getStaging(h.ctx, "w")
	if err != nil || !ok || st.MountRoot == "" {
		t.Fatalf("staging of w: %+v %v %v, want what its mount shows recorded", st, ok, err)
	}
	// w's file system gone from the host: its target and its staging unmounted.
	if err := unix.Unmount(a.TargetPath, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(staging, 0); err != nil {
		t.Fatal(err)
	}
	// Another file system of the kind mounted at the staging path.
	if err := unix.Mount("volctl-test-other", staging, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(staging, "other-data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var sx unix.Stat_t
	if err := unix.Stat(staging, &sx); err == nil {
		t.Logf("w staged on device %d:%d (root %s); the other tmpfs at its staging is on %d:%d",
			unix.Major(st.MountDev), unix.Minor(st.MountDev), st.MountRoot, unix.Major(uint64(sx.Dev)), unix.Minor(uint64(sx.Dev)))
	}

	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	if err == nil {
		defer func() { _, _ = h.e.Release(h.ctx, "w", "b") }()
		entries, _ := os.ReadDir(b.TargetPath)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("claim of w joining its staging, whose tmpfs was unmounted and another tmpfs mounted in its place: published at %s, which holds %v: "+
			"the alloc is handed the other file system as volume w; want it refused, naming `umount %s`", b.TargetPath, names, staging)
	}
	if !strings.Contains(err.Error(), "`umount "+staging+"`") {
		t.Fatalf("claim of w joining its replaced staging: %v; want it refused naming `umount %s`", err, staging)
	}
}

// TestStagingWhoseSourceDirectoryWasRenamedIsJoined: the root a mount shows is the
// path, within its file system, of the directory it was made of, as the kernel spells it when
// asked: a directory renamed since (a plugin's storage directory moved on its disk; volctl's
// own hostpath plugin, its root moved, advises "restart the plugin with --root where it is
// now") is shown under its new name by the very mount the volume was staged with. A claim
// joining the staging found another root than the one recorded, no such mount in the stack, and
// was refused as "unmounted, and another mounted in their place", advising the unmount of the
// staging and the release of every claim of the volume, though nothing was unmounted and the
// staging shows the volume's data. Real mounts, as root. Found by helper review71 (own4 review).
func TestStagingWhoseSourceDirectoryWasRenamedIsJoined(t *testing.T) {
	storage := filepath.Join(t.TempDir(), "storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		t.Fatal(err)
	}
	h := kernelHarness(t, func(c *csitest.MemConfig) { c.MountRoot = storage })
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"})
	t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "w", "a") })
	if err := os.WriteFile(filepath.Join(a.TargetPath, "w-data"), []byte("w"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, ok, err := h.e.getStaging(h.ctx, "w"); err != nil || !ok || st.MountRoot == "" {
		t.Fatalf("staging of w: %+v %v %v, want what its mount shows recorded", st, ok, err)
	}
	// The plugin's storage directory moved on its disk; the staging's mount is untouched.
	if err := os.Rename(storage, storage+"-moved"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Rename(storage+"-moved", storage) })

	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	if err != nil {
		t.Fatalf("claim of w joining its staging, the very mount it was staged with (its source directory renamed since): %v\n"+
			"want it published: nothing was unmounted or mounted there", err)
	}
	defer func() { _, _ = h.e.Release(h.ctx, "w", "b") }()
	if _, err := os.Stat(filepath.Join(b.TargetPath, "w-data")); err != nil {
		t.Fatalf("claim of w: its target lacks w's data: %v", err)
	}
}
