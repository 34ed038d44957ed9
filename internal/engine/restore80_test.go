package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// removingUnpublish is a NodeUnpublishVolume that, once the plugin answered OK, removes the
// target with whatever it holds (os.RemoveAll): CSI has a plugin delete what it made at the
// target, and a plugin that is not polite deletes it recursively, as the design's setAsideWritten
// warns ("may have another plugin delete them").
func removingUnpublish() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*csipb.NodeUnpublishVolumeRequest)
		if !ok {
			return handler(ctx, req)
		}
		resp, err := handler(ctx, req)
		if err == nil {
			if mounted, merr := (hostpath.SystemMounter{}).IsMountPoint(r.GetTargetPath()); merr == nil && !mounted {
				_ = os.RemoveAll(r.GetTargetPath())
			}
		}
		return resp, err
	}
}

// TestRestoreOfASecondClaimSetsAsideWhatWasWrittenAtTheFirstClaimsTarget: after a reboot, an
// application of alloc a (started before the agent's restore) writes a file into its bare
// target directory. Reconcile restores the two claims of the multi-writer volume: a's restore's
// NodeStageVolume mounts the staging and answers INTERNAL, so the staging is mounted though
// recorded unstaged. b's restore then takes unstageUnrecorded's degraded branch, which sends
// NodeUnpublishVolume of a's target (emptyTargets: "holds nothing" by the mount table) as a raw
// RPC, not through unpublishTarget: what a's target holds is not set aside first
// (setAsideWritten), as every other NodeUnpublishVolume of a target not mounted does. A plugin
// whose NodeUnpublishVolume removes the target recursively deletes what the application wrote,
// and nothing says so. Correct: what a's target holds is moved aside (TARGET.written-TIME) before
// any NodeUnpublishVolume of it is sent, by this branch as by unpublishTarget.
// Found by helper review80 (restore).
func TestRestoreOfASecondClaimSetsAsideWhatWasWrittenAtTheFirstClaimsTarget(t *testing.T) {
	t.Parallel()
	h, a, _ := twoClaimsRebooted(t, csitest.WithInterceptor(removingUnpublish()))
	// The application of alloc a, started before the restore, writes into the bare target.
	if err := os.WriteFile(filepath.Join(a.TargetPath, "app.log"), []byte("written while unmounted"), 0o644); err != nil {
		t.Fatal(err)
	}

	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Lost: true, Code: codes.Internal, Message: "write state file: failed after the mount", Times: 1})
	for range 3 {
		rep, err := h.e.Reconcile(h.ctx)
		t.Logf("pass: %v, problems %+v", err, rep.Problems)
	}
	found := false
	for _, p := range append([]string{a.TargetPath}, globAsides(t, a.TargetPath)...) {
		if got, err := os.ReadFile(filepath.Join(p, "app.log")); err == nil && string(got) == "written while unmounted" {
			found = true
		}
	}
	if !found {
		t.Errorf("app.log, written at alloc a's bare target %s after the reboot, is gone after the restores (NodeUnpublishVolume sent %d time(s)): "+
			"b's restore sent NodeUnpublishVolume of a's target without setting aside what it held; want it moved to %s.written-TIME first",
			a.TargetPath, h.faults.Calls(csi.RPCNodeUnpublishVolume), a.TargetPath)
	}
}

// globAsides lists what setAsideWritten moved aside from target.
func globAsides(t *testing.T, target string) []string {
	t.Helper()
	m, err := filepath.Glob(target + ".written-*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// followingUnpublish is a NodeUnpublishVolume of a plugin that unmounts the target path as
// umount(8) does, following a symlink there (as a plugin calling `umount TARGET` does), before
// its own teardown: the hazard unpublishTarget's link checks (unlinkBeforeTeardown,
// linkedToOthers) keep from every other NodeUnpublishVolume volctl sends.
func followingUnpublish() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csipb.NodeUnpublishVolumeRequest); ok {
			_ = unix.Unmount(r.GetTargetPath(), 0) // follows a symlink at the path
		}
		return handler(ctx, req)
	}
}

// TestRestoreOfASecondClaimSendsNoUnpublishThroughALinkAtTheFirstClaimsTarget: after a reboot,
// alloc a's bare target directory was replaced by a symlink to alloc c's target, where another
// volume is published and in use (by hand or by a program). Reconcile restores the two claims of
// the multi-writer volume "data": a's restore's NodeStageVolume mounts the staging and answers
// INTERNAL, and b's restore takes unstageUnrecorded's degraded branch, which counts a's target as
// holding nothing (the mount table lists nothing at the link's own path) and sends
// NodeUnpublishVolume of it as a raw RPC, without the checks every other NodeUnpublishVolume of
// a target gets (unpublishTarget: unlinkBeforeTeardown, linkedToOthers). A plugin that unmounts
// the path it is given as umount(8) does follows the link and unmounts volume "other" from
// under alloc c, whose claim is recorded published and healthy: the pass reports b restored and
// only a's stage failure, nothing of c (the next pass "restores" c, what alloc c wrote meanwhile
// going to the host's disk). Correct: no NodeUnpublishVolume is sent through a link at another
// claim's target that leads to what another claim holds (as unpublishTarget's checks hold for
// every other one); c's mount stays.
// Found by helper review80 (restore).
func TestRestoreOfASecondClaimSendsNoUnpublishThroughALinkAtTheFirstClaimsTarget(t *testing.T) {
	t.Parallel()
	h, a, _ := twoClaimsRebooted(t, csitest.WithInterceptor(followingUnpublish()))
	// Alloc c's volume, claimed since the reboot, published and in use.
	c := h.claimNew(t, "other", "c", spec.SingleNodeWriter)
	unmountAllAt(t, c.TargetPath)
	if err := os.WriteFile(filepath.Join(c.TargetPath, "c.txt"), []byte("alloc c's"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A program replaces a's bare target with a link to c's.
	if err := os.Remove(a.TargetPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(c.TargetPath, a.TargetPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(a.TargetPath) })

	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Lost: true, Code: codes.Internal, Message: "write state file: failed after the mount", Times: 1})
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("pass: %v, actions %+v, problems %+v", err, rep.Actions, rep.Problems)
	if !hostpathtest.Mounted(t, c.TargetPath) {
		_, serr := os.Stat(filepath.Join(c.TargetPath, "c.txt"))
		t.Errorf("alloc c's target %s of volume \"other\", published and healthy, is no longer mounted after the restores of volume \"data\" (c.txt visible: %v; NodeUnpublishVolume sent %d time(s)): "+
			"b's restore sent NodeUnpublishVolume of a's target through the link there to c's; want nothing sent through a link leading to what another claim holds",
			c.TargetPath, serr == nil, h.faults.Calls(csi.RPCNodeUnpublishVolume))
	}
}

// twoClaimsRebooted is a hostpath engine (attaching, its server given opts) whose multi-writer
// volume "data" has allocs a's and b's claims, after a reboot: every mount of theirs gone
// (unmountAllAt), the staging's too. It returns the engine, a's claim and the staging path.
func twoClaimsRebooted(t *testing.T, opts ...csitest.ServeOption) (*hostpathEngine, ClaimInfo, string) {
	t.Helper()
	hostpathtest.RequireMount(t)
	h := newHostpathEngineAt(t, hostpathtest.MountDir(t), hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true}, opts...)
	a := h.claimNew(t, "data", "a", spec.MultiNodeMultiWriter)
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "b"})
	if err != nil {
		t.Fatal(err)
	}
	unmountAllAt(t, a.TargetPath)
	unmountAllAt(t, b.TargetPath)
	staging := h.writeThenReboot(t, a, "data")
	unmountAllAt(t, staging)
	if err := unix.Unmount(b.TargetPath, 0); err != nil { // the reboot, for the second claim
		t.Fatal(err)
	}
	return h, a, staging
}
