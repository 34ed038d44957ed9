package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// Two plugin processes serve one --root after a handover to Nomad: volctl's own (the agent's,
// or one started by hand as README's tour does) and the one Nomad runs from the job `volctl
// export nomad` writes, whose --root is volctl's. Each loaded the records at its start, so a
// volume the first created since (volctl volume create, then volctl nomad register) was unknown
// to the second: Nomad's NodeStageVolume, and its ControllerValidateVolumeCapabilities at
// registration with --enable-attach, were answered NOT_FOUND until the plugin job restarted.
// A volume not in memory is looked up in its record on disk.
func TestVolumeCreatedByAnotherProcessOnTheRootIsServed(t *testing.T) {
	root := t.TempDir()
	for _, attach := range []bool{false, true} {
		cfg := hostpath.Config{Root: root, NodeID: "n1", EnableAttach: attach}
		local, _ := startFake(t, cfg)
		nomad, _ := startFake(t, cfg)
		v := local.createVolume(t, "late")
		ctx := context.Background()
		if _, err := nomad.ctl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
			VolumeId: v.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{snw}}); err != nil {
			t.Fatalf("attach %v: ValidateVolumeCapabilities through the other process of a volume created since it started: %v", attach, err)
		}
		var pc map[string]string
		if attach {
			resp, err := nomad.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
				VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
			if err != nil {
				t.Fatalf("ControllerPublishVolume through the other process: %v", err)
			}
			pc = resp.GetPublishContext()
		}
		p := newPaths(t)
		mustOK(t, nomad.stage(v, p, pc))
		mustOK(t, nomad.publish(v, p, p.target, false, pc))
		mustOK(t, nomad.unpublish(v, p.target))
		mustOK(t, nomad.unstage(v, p))
		// A volume that has no record anywhere is still not found.
		_, err := nomad.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-" + "0123456789abcdef01234567",
			StagingTargetPath: p.staging, VolumeCapability: snw, PublishContext: pc})
		wantCode(t, err, codes.NotFound, "not found")
	}
}

// A plugin's start throws away the copies a crash interrupted (partial/), but not one another
// process serving the same root is making: it emptied partial/ whole, under a snapshot or
// clone being copied there by the other (volctl's own plugin restarted by the agent while
// Nomad's copies, or Nomad's job restarted while volctl's does), whose copy then failed or,
// renamed to its final name while the removal went on inside it, was answered OK with files
// missing. A copy holds a lock on its directory in partial/ while it runs; a start removes only
// the directories it can lock.
func TestStartLeavesACopyInProgressOfAnotherProcess(t *testing.T) {
	root := t.TempDir()
	startFake(t, hostpath.Config{Root: root, NodeID: "n1"}) // makes partial/
	busy, left := filepath.Join(root, "partial", "copy-busy"), filepath.Join(root, "partial", "copy-left")
	for _, d := range []string{busy, left} {
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	lockAsAnotherProcess(t, busy) // its copy
	startFake(t, hostpath.Config{Root: root, NodeID: "n1"})
	if _, err := os.Stat(filepath.Join(busy, "data")); err != nil {
		t.Errorf("a copy in progress, its directory locked, after another process started on the root: %v", err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("a copy a crash interrupted (its directory not locked), after a start: %v, want it removed", err)
	}
}

// Nor does a start sweep up as an interrupted create's the directory of a volume or snapshot
// another process on the root has just put in place and not yet recorded: a create holds a
// lock on it until its record is saved, and the sweep removes only those it can lock. Before,
// it removed it, and the other process answered the create OK with no directory behind it.
func TestStartLeavesACreateInProgressOfAnotherProcess(t *testing.T) {
	root := t.TempDir()
	startFake(t, hostpath.Config{Root: root, NodeID: "n1"}) // makes volumes/ and snapshots/
	var held []string
	for _, d := range []string{
		filepath.Join(root, "volumes", "vol-"+strings.Repeat("c", 24)),
		filepath.Join(root, "snapshots", "snap-"+strings.Repeat("d", 24)),
	} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		lockAsAnotherProcess(t, d) // its create
		held = append(held, d)
	}
	startFake(t, hostpath.Config{Root: root, NodeID: "n1"})
	for _, d := range held {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("a create in progress, its directory locked, after another process started on the root: %v", err)
		}
	}
}

// lockAsAnotherProcess holds dir's lock, as another plugin process on the root holds that of
// a copy or create it has in progress, or of its records (meta/) while it changes one, until
// unlock is called or the test ends.
func lockAsAnotherProcess(t *testing.T, dir string) (unlock func()) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
			t.Fatal(err)
		}
	}
}

// A volume handed over to Nomad with --force while a local claim is live is served by both
// processes on the root at once, each with the record in memory as it last read or wrote it.
// Nomad's, which had read the record before the local claim staged the volume, staged it at
// a second path and rewrote the record from its copy: the local staging and target went from
// it, and a restart of the local plugin then refused to unmount the target it had published
// ("refusing to unmount what is mounted there"). Each change reads the record as it is on
// disk, under a lock on the root the processes share, and writes it back before the other
// may: one writer at a time, neither losing what the other recorded.
func TestTwoProcessesOnTheRootDoNotLoseEachOthersRecord(t *testing.T) {
	root := t.TempDir()
	kernel := &hostpathtest.FakeMounter{} // one host: both processes see the same mounts
	cfg := hostpath.Config{Root: root, NodeID: "n1", Mounter: kernel}
	local := start(t, cfg)
	v := local.createVolume(t, "db")
	nomad := start(t, cfg) // loads the record as it is now: nothing staged
	mine, theirs := newPaths(t), newPaths(t)
	mustOK(t, local.stage(v, mine, nil))
	mustOK(t, local.publish(v, mine, mine.target, false, nil))

	// One staging path per volume, whoever staged it.
	wantCode(t, nomad.stage(v, theirs, nil), codes.FailedPrecondition, "already staged at", mine.staging)

	// What the local process published is on disk: a restart of it unpublishes and unstages.
	restarted := start(t, cfg)
	mustOK(t, restarted.unpublish(v, mine.target))
	mustOK(t, restarted.unstage(v, mine))
	if m := kernel.Mounts(); len(m) != 0 {
		t.Fatalf("left mounted: %v", m)
	}

	// Now free, the volume stages through the other process, and the first one's stale copy
	// (staged, published) does not bring back what is gone, nor refuse what is there.
	mustOK(t, nomad.stage(v, theirs, nil))
	mustOK(t, nomad.publish(v, theirs, theirs.target, false, nil))
	wantCode(t, local.stage(v, mine, nil), codes.FailedPrecondition, "already staged at", theirs.staging)
	mustOK(t, local.unpublish(v, mine.target)) // not published there any more: nothing to do
	mustOK(t, nomad.unpublish(v, theirs.target))
	mustOK(t, nomad.unstage(v, theirs))
	if m := kernel.Mounts(); len(m) != 0 {
		t.Fatalf("left mounted: %v", m)
	}

	// Deleted through one, the volume is gone for the other, whose copy goes with it.
	_, err := restarted.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	mustOK(t, err)
	wantCode(t, local.stage(v, mine, nil), codes.NotFound, "not found")
}

// A change to a volume's record waits for the lock on meta/ that another process serving the
// root holds while it changes one: the two never read, change and write one record at once.
// It waits for it before taking the process's own lock (mu), and no longer than its deadline:
// taken under mu, while the other process held it (stopped, frozen by a cgroup freezer, or
// slow in a mount), every RPC of this process that takes mu alone (ListVolumes, GetCapacity,
// snapshots, a create) waited behind the change, past any deadline.
func TestRecordChangesWaitForAnotherProcessOnTheRoot(t *testing.T) {
	root := t.TempDir()
	c, _ := startFake(t, hostpath.Config{Root: root, NodeID: "n1"})
	v := c.createVolume(t, "db")
	unlock := lockAsAnotherProcess(t, filepath.Join(root, "meta")) // another process's RPC
	staged := make(chan error, 1)
	go func() { staged <- c.stage(v, newPaths(t), nil) }()
	select {
	case err := <-staged:
		t.Fatalf("NodeStageVolume answered (%v) while another process held the records' lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{}); err != nil {
		t.Errorf("ListVolumes while another process holds the records' lock and a stage waits for it: %v, want an answer", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	_, err := c.ctl.ControllerExpandVolume(short, &csi.ControllerExpandVolumeRequest{VolumeId: v.GetVolumeId(),
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}})
	wantCode(t, err, codes.DeadlineExceeded)
	unlock()
	select {
	case err := <-staged:
		mustOK(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("NodeStageVolume still waiting after the other process let go of the records' lock")
	}
}

// ControllerUnpublishVolume of a volume still staged or published on the node is refused
// (FAILED_PRECONDITION, naming the path): the CSI spec has the CO send it only after every
// NodeUnpublishVolume and NodeUnstageVolume, and one sent before pulled the attachment from
// under the mounts. Two orchestrators reach that: Nomad's allocs refused the staging volctl's
// claim holds (a handover of an older volctl, or one registered with nomad volume register by
// hand) end their claims with ControllerUnpublishVolume through the plugin Nomad runs on the
// root, and so does Nomad itself when an alloc's claim ends while another alloc on the node
// is claiming the volume. Before, it was answered OK and the attachment went: the node RPCs
// still to come with the publish_context the mounts were made with (another target, a restore
// after a reboot) were refused as "not controller-published", and --max-volumes counted the
// volume out while it was mounted. Once unmounted (unstaged, or by hand: a forced detach
// unmounts volctl's paths itself), it detaches.
func TestControllerUnpublishOfAVolumeStillMountedIsRefused(t *testing.T) {
	root := t.TempDir()
	kernel := &hostpathtest.FakeMounter{}
	cfg := hostpath.Config{Root: root, NodeID: "n1", Mounter: kernel, EnableAttach: true, MaxVolumes: 1}
	local := start(t, cfg)
	nomad := start(t, cfg)
	ctx := context.Background()
	v := local.createVolume(t, "db")
	other := local.createVolume(t, "other")
	pub, err := local.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	pc := pub.GetPublishContext()
	p := newPaths(t)
	mustOK(t, local.stage(v, p, pc))
	mustOK(t, local.publish(v, p, p.target, false, pc))

	for _, c := range []*client{local, nomad} {
		for _, node := range []string{"n1", ""} {
			_, err := c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: node})
			wantCode(t, err, codes.FailedPrecondition, v.GetVolumeId(), "staged at", p.staging, "NodeUnstageVolume first")
		}
	}
	// The attachment stands: a second target publishes with the publish_context it handed out,
	// and --max-volumes still counts it.
	second := filepath.Join(filepath.Dir(p.target), "second")
	mustOK(t, local.publish(v, p, second, false, pc))
	_, err = nomad.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: other.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	wantCode(t, err, codes.ResourceExhausted, "max volumes 1")

	mustOK(t, local.unpublish(v, second))
	kernel.Forget(p.staging) // unmounted by hand: the target is still mounted, and refused, named
	_, err = nomad.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1"})
	wantCode(t, err, codes.FailedPrecondition, "published at", p.target, "NodeUnpublishVolume first")
	// A mount gone without the node RPCs (a forced detach unmounts volctl's paths itself) is no
	// use: the attachment goes.
	kernel.Forget(p.target)
	_, err = nomad.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1"})
	mustOK(t, err)
	_, err = nomad.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: other.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
}

// NodeUnstageVolume at a path the volume is not staged at, with nothing mounted there, is OK
// (CSI: "not staged to the staging_target_path: reply OK"), while another orchestrator's claim
// stages and publishes the volume at its own paths: Nomad's alloc, refused the staging volctl's
// claim holds, unstages its own path when it ends. Refused there ("still published at" the
// other claim's target), Nomad's client retried it every minute for a day and named the volume
// as not unmounted. Nothing of the other claim is touched.
func TestNodeUnstageAtAPathNotStagedIsOKBesideAnotherClaim(t *testing.T) {
	root := t.TempDir()
	kernel := &hostpathtest.FakeMounter{}
	cfg := hostpath.Config{Root: root, NodeID: "n1", Mounter: kernel}
	local := start(t, cfg)
	nomad := start(t, cfg)
	v := local.createVolume(t, "db")
	p := newPaths(t)
	mustOK(t, local.stage(v, p, nil))
	mustOK(t, local.publish(v, p, p.target, false, nil))

	theirs := newPaths(t)
	wantCode(t, nomad.stage(v, theirs, nil), codes.FailedPrecondition, "already staged at", p.staging)
	mustOK(t, nomad.unpublish(v, theirs.target))
	mustOK(t, nomad.unstage(v, theirs))
	for _, path := range []string{p.staging, p.target} {
		if mounted, _ := kernel.IsMountPoint(path); !mounted {
			t.Errorf("%s unmounted by another orchestrator's unstage of its own path", path)
		}
	}
	mustOK(t, local.unpublish(v, p.target))
	mustOK(t, local.unstage(v, p))
}
