package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// An expansion to 4 MiB is left pending (its answers lost; the plugin grew the storage). The
// user then asks for a size the plugin can never give (above its maximum volume size): the
// intent is rewritten to that size, the plugin refuses it (OUT_OF_RANGE, final), and the
// refusal of a "replayed" expansion kept it pending, at the impossible size. The lost 4 MiB
// attempt was forgotten, and every reconcile (and the same expand, as the error advised) sent
// the impossible size again and was refused again: the volume stayed pending for good, recorded
// at 1 MiB while its storage is 4 MiB. The refusal says the impossible size was not done: the
// pending expansion stays the lost one (4 MiB), which reconcile finishes. Found by helper
// review64 (own), in this round's change.
func TestRefusedExpandBesideAPendingOneKeepsThePendingOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Node.ExpandVolume, c.Controller.ListVolumes = false, false
		c.MaxVolumeSize = 8 * mib
	})
	h.create(volume("v"))
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("expand whose answers were all lost succeeded")
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Fatalf("after the lost answers: expansion pending %d, want %d", v.ExpansionPending, 4*mib)
	}
	_, err := h.e.ExpandVolume(h.ctx, "v", 64*mib, 0)
	if err == nil {
		t.Fatal("expand above the plugin's maximum succeeded")
	}
	if csi.CodeOf(err) != codes.OutOfRange {
		t.Logf("code %v", csi.CodeOf(err))
	}
	t.Logf("the refused expand's error: %v", err)
	for i := 0; i < 2; i++ {
		rep, rerr := h.e.Reconcile(h.ctx)
		if rerr != nil {
			t.Logf("reconcile: %v", rerr)
		}
		for _, p := range rep.Problems {
			t.Logf("reconcile pass %d problem: %s", i+1, p.Message)
		}
	}
	v := h.volumeInfo("v")
	ext := v.ExternalID
	got, _ := h.mem.Volume(ext)
	if v.ExpansionPending != 0 || v.CapacityBytes != got.CapacityBytes {
		t.Errorf("after the 64 MiB expand was refused OUT_OF_RANGE and two reconciles: recorded at %d bytes, expansion pending %d; the plugin holds the storage at %d bytes. "+
			"want the lost 4 MiB expansion kept pending (not replaced by the refused size) and finished by reconcile", v.CapacityBytes, v.ExpansionPending, got.CapacityBytes)
	}
}

// sharedNSChildEnv, set to a state dir, makes TestSharedNamespaceChild act on it;
// sharedNSStopEnv, set, makes it stop group web after its reconcile.
const (
	sharedNSChildEnv = "VOLCTL_TEST_SHARED_NS_STATE"
	sharedNSStopEnv  = "VOLCTL_TEST_SHARED_NS_STOP"
)

// A volctl run in another mount namespace whose mounts share peer groups with the plugin's
// (`unshare -m --propagation unchanged`, a container given the tree rshared): documented as let
// act (mountns.go, TestMountViewSharedPeerGroup). There every mount is a copy with its own
// mount ID, the unique one too. A group's bind made by a volctl in the host's namespace is
// recorded by its ID there (claims.bind_mounts); the same bind, seen from the other namespace,
// has another ID, so notOwnBind took it for "not the mount this claim's bind made": reconcile
// there refused the claim's own bind as a conflict, and the group's stop there left it
// bound ("left bound" in the log), freed the claim, and the volume stayed mounted at the
// destination in both namespaces with no claim (an unmount in the other namespace, made
// before the record, propagated to the host's). A record is read only in the namespace it was
// made in. Found by helper review64 (own), in this round's change. Real mounts, as root.
func TestBindSeenFromASharedNamespaceIsTheClaimsOwn(t *testing.T) {
	t.Parallel()
	h, state, dest := sharedNamespaceGroup(t)
	h.e.Close() // the child opens the state itself
	out := inSharedNamespace(t, state, true)
	if out["reconcile"] != "ok" {
		t.Errorf("reconcile from a namespace sharing the host's peer groups, web[0]'s bind in place: %s; want no problem (it is the claim's own bind)", out["reconcile"])
	}
	if hostpathtest.Mounted(t, dest) {
		t.Errorf("after group web was stopped (from the shared namespace: %s), the volume is still bound at %s, web[0]'s destination, with no claim of it", out["stop"], dest)
	}
}

// web[0]'s bind is made here (recorded by its ID here) and unmounted by hand; `volctl
// reconcile` run from a namespace sharing the peer groups binds it again, its copy here a new
// mount with a new ID. Before, the record was left naming the gone mount (a record is dropped
// before its destination is bound again only where it is read, and the other namespace reads
// none), and back here (the agent's namespace) the claim's own bind was "not the mount this
// claim's bind made there": the group's stop left the volume bound at web[0]'s destination,
// with no claim. A bind made over another namespace's record drops it. Found by helper review64
// (own2), in this round's change. Real mounts, as root.
func TestRebindFromASharedNamespaceLeavesNoStaleRecord(t *testing.T) {
	t.Parallel()
	h, state, dest := sharedNamespaceGroup(t)
	if err := unix.Unmount(dest, 0); err != nil { // by hand
		t.Fatal(err)
	}
	h.e.Close()
	inSharedNamespace(t, state, false)
	if !hostpathtest.Mounted(t, dest) {
		t.Fatalf("the reconcile in the shared namespace did not bind web[0]'s destination again (or it did not propagate here)")
	}
	e, err := Open(context.Background(), Config{StateDir: state, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, serr := e.StopGroup(context.Background(), "web")
	if hostpathtest.Mounted(t, dest) {
		t.Errorf("after group web was stopped here (err %v), the volume is still bound at %s, web[0]'s destination: its record still names the bind made here before, gone, "+
			"which the reconcile in the shared namespace replaced without dropping the record", serr, dest)
		_ = unix.Unmount(dest, unix.MNT_DETACH)
	} else if serr != nil {
		t.Errorf("stop web: %v", serr)
	}
}

// sharedNamespaceGroup is a hostpath engine whose state dir and plugin root lie under a shared
// bind of their own (so that a namespace made with `unshare -m --propagation unchanged` shares
// its peer groups), with volume "data" held by group web, bound at dest; and its state dir.
func sharedNamespaceGroup(t *testing.T) (h *hostpathEngine, state, dest string) {
	t.Helper()
	hostpathtest.RequireMount(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1): a namespace sharing this one's peer groups cannot be made")
	}
	top := hostpathtest.MountDir(t)
	if err := unix.Mount(top, top, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", top, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	state, root := filepath.Join(top, "state"), filepath.Join(top, "root")
	for _, d := range []string{state, root} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h = newHostpathEngineAt(t, state, hostpath.Config{Root: root, NodeID: "n1", EnableAttach: true})
	sv := spec.Volume{ID: "data", Name: "data", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.MultiNodeSingleWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	dest = filepath.Join(top, "dest", "data")
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("web", 1, false, dest)); err != nil {
		t.Fatal(err)
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Fatalf("web[0]'s volume_mount %s is not bound", dest)
	}
	return h, state, dest
}

// inSharedNamespace runs TestSharedNamespaceChild on state in a new mount namespace sharing this
// one's peer groups: a reconcile pass, then, with stop, group web's stop. It returns what each
// said, by "reconcile" and "stop": "ok", or the error and problems.
func inSharedNamespace(t *testing.T, state string, stop bool) map[string]string {
	t.Helper()
	cmd := exec.Command("unshare", "-m", "--propagation", "unchanged", os.Args[0],
		"-test.run=^TestSharedNamespaceChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), sharedNSChildEnv+"="+state)
	if stop {
		cmd.Env = append(cmd.Env, sharedNSStopEnv+"=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child in a shared mount namespace: %v\n%s", err, out)
	}
	said := map[string]string{}
	for l := range strings.Lines(string(out)) {
		for _, op := range []string{"reconcile", "stop"} {
			if v, ok := strings.CutPrefix(l, op+": "); ok {
				said[op] = strings.TrimSpace(v)
				t.Logf("child: %s: %s", op, said[op])
			}
		}
	}
	return said
}

// TestSharedNamespaceChild is the child of the tests that act from a namespace sharing their
// peer groups (inSharedNamespace); it skips unless started by one.
func TestSharedNamespaceChild(t *testing.T) {
	ctx := context.Background()
	e := childEngine(t, sharedNSChildEnv, "inSharedNamespace", Config{})
	flat := func(s string) string { return strings.ReplaceAll(s, "\n", " ") }
	rep, err := e.Reconcile(ctx)
	msg := "ok"
	if err != nil || len(rep.Problems) > 0 {
		msg = fmt.Sprint(err)
		for _, p := range rep.Problems {
			msg += "; " + p.Message
		}
	}
	fmt.Printf("reconcile: %s\n", flat(msg))
	if os.Getenv(sharedNSStopEnv) != "" {
		_, err = e.StopGroup(ctx, "web")
		fmt.Printf("stop: %s\n", flat(fmt.Sprint(err)))
	}
}

// A claim's record of its bind holds the mount table's ID and, from Linux 6.8, the unique one;
// before 6.8 (Debian 12's 6.1, Ubuntu 22.04's 5.15, RHEL 9's 5.14) only the table's, which the
// kernel hands the next mount made once the bind is unmounted (lowest free). web[0]'s bind is
// unmounted by hand; the record stays; an unrelated mount (here a tmpfs; another alloc's bind of
// another volume is as likely) gets its ID. recordedElsewhere took any mount of that ID at
// another path for the claim's bind moved there, without asking whether it is a mount of the
// volume at all: the group's stop was refused, "volume data is still bound at <the tmpfs>", and
// the error told the user to umount it. The record is written as a pre-6.8 kernel leaves it (no
// unique ID) and names the tmpfs's ID, as the reuse does. Found by helper review64 (own), in
// this round's change. Real mounts, as root.
func TestReusedMountIDOfAnotherMountIsNotTakenForTheClaimsBind(t *testing.T) {
	t.Parallel()
	h, dir, dest, _ := websBindUnmountedByHand(t)
	other := filepath.Join(dir, "other", "disk")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", other, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	otherID := mountIDOf(t, other)
	err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		c, err := tx.Claims().Find("data", "web[0]")
		if err != nil {
			return err
		}
		rec, ok := recordedBind(&c, dest)
		if !ok {
			return fmt.Errorf("web[0] records no bind at %s: %+v", dest, c.BindMounts)
		}
		t.Logf("web[0]'s bind had ID %d; the tmpfs made after its unmount has ID %d", rec.ID, otherID)
		return tx.Claims().SetBindMounts(c.ID, &store.BindMounts{Boot: bootID(), MountNS: mountNS(), At: map[string]store.BindMount{filepath.Clean(dest): {ID: otherID}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.e.StopGroup(h.ctx, "web")
	if err != nil {
		t.Errorf("stop web, its bind unmounted by hand and its mount ID reused by an unrelated tmpfs at %s: %v; want it released (the tmpfs is no mount of the volume)", other, err)
	}
	if !hostpathtest.Mounted(t, other) {
		t.Errorf("the unrelated tmpfs at %s was unmounted", other)
	}
}

// websBindUnmountedByHand is a hostpath engine with shared volume "data" held by group web,
// whose bind at DIR/a/data was unmounted by hand (its record left naming it): the engine, DIR,
// the destination, and the mount ID the bind had.
func websBindUnmountedByHand(t *testing.T) (h *hostpathEngine, dir, dest string, id uint64) {
	t.Helper()
	h = newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	dir = hostpathtest.MountDir(t)
	dest = filepath.Join(dir, "a", "data")
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("web", 1, false, dest)); err != nil {
		t.Fatal(err)
	}
	id = mountIDOf(t, dest)
	if err := unix.Unmount(dest, 0); err != nil {
		t.Fatal(err)
	}
	return h, dir, dest, id
}
