package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// remountingWithALateAnswer is a NodePublishVolume that is not idempotent, as plugins that mount
// without looking first are: sent for a target that is a mount point already, it answers OK
// and binds the target over itself once more, a second mount its NodeUnpublishVolume (which
// unmounts once) leaves behind. While *slow is set, the next NodePublishVolume acts and then
// answers only after delay: its answer is lost to volctl's own timeout (a plugin slow under
// load after a reboot), as a kill after the RPC loses it.
func remountingWithALateAnswer(slow *atomic.Bool, delay time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*csipb.NodePublishVolumeRequest)
		if !ok {
			return handler(ctx, req)
		}
		resp, err := remountOver(ctx, r.GetTargetPath(), req, handler)
		if slow.CompareAndSwap(true, false) {
			time.Sleep(delay)
		}
		return resp, err
	}
}

// mountsStackedAt counts the mounts stacked at path.
func mountsStackedAt(t *testing.T, path string) int {
	t.Helper()
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) { return m.Mountpoint != path, false })
	if err != nil {
		t.Fatal(err)
	}
	return len(mounts)
}

// TestRestoreRedrivenAfterItsPublishAnswerWasLostStacksNoSecondMount: after a reboot, a
// reconcile restores a published claim; the plugin mounts the target at the restore's
// NodePublishVolume but its answer is lost (volctl's timeout; a kill after the RPC is the
// same), leaving the claim node-staged and degraded with the volume mounted at its target. The
// next pass drives the claim on and sends NodePublishVolume again without looking
// (publishedBefore returns false for every degraded claim, "a restore is driven because its
// target was found unmounted", which is no longer true on the re-drive): a plugin that mounts
// without looking first stacks a second mount at the target, the claim is recorded published,
// and its release leaves a mount at the target and fails at every try, the very hazard
// publishedBefore exists to avoid (TestCrashAfterNodePublishAgainstARemountingPlugin). Correct:
// a degraded claim whose restore's NodePublishVolume may have been sent (TargetNotAccepted) and
// whose target now holds the volume as checkTarget accepts it is recorded published without
// sending the RPC again, leaving one mount, and releases cleanly. Found by helper review74.
func TestRestoreRedrivenAfterItsPublishAnswerWasLostStacksNoSecondMount(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	var slow atomic.Bool
	const long = 2 * time.Second
	h := newHostpathEngineAt(t, hostpathtest.MountDir(t), hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true},
		csitest.WithInterceptor(remountingWithALateAnswer(&slow, 2*long)))
	h.e.Close()
	e, err := Open(h.ctx, Config{StateDir: h.state, Retry: fastRetry, Timeouts: csi.Timeouts{Short: 5 * time.Second, Long: long}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h.e = e

	cl := h.claimNew(t, "data", "a", spec.SingleNodeWriter)
	h.writeThenReboot(t, cl, "data")

	slow.Store(true)
	first, err := h.e.Reconcile(h.ctx)
	if err == nil || len(first.Problems) != 1 {
		t.Fatalf("first pass: the restore's NodePublishVolume was to time out, one problem: %+v, %v", first, err)
	}
	t.Logf("first pass: %s", first.Problems[0].Message)
	if !hostpathtest.Mounted(t, cl.TargetPath) {
		t.Fatalf("precondition: the plugin did not mount the target at the restore whose answer was lost")
	}
	st, err := h.e.ClaimInfo(h.ctx, "data", "a")
	if err != nil || st.State != "node-staged" {
		t.Fatalf("precondition: claim after the first pass = %+v, %v; want node-staged (degraded)", st, err)
	}
	// Give the slow answer time to end, so it is not what the next pass meets.
	time.Sleep(2 * long)

	publishes := h.faults.Calls(csi.RPCNodePublishVolume)
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("second pass: %v (%+v)", err, rep)
	}
	n := mountsStackedAt(t, cl.TargetPath)
	sent := h.faults.Calls(csi.RPCNodePublishVolume) - publishes
	if n != 1 {
		t.Errorf("after the pass that finished the restore, %d mounts at %s (NodePublishVolume sent %d more time(s) onto the mounted target); want one", n, cl.TargetPath, sent)
	}
	releasesCleanly(t, h, cl)
}

// releasesCleanly checks, of claim cl of volume data for alloc a restored once, that its
// target is kept, and that its release leaves no mount there (unmounting what is left).
func releasesCleanly(t *testing.T, h *hostpathEngine, cl ClaimInfo) {
	t.Helper()
	requireKept(t, cl.TargetPath, "the restored target")
	if _, err := h.e.Release(h.ctx, "data", "a"); err != nil {
		t.Errorf("release after the restore: %v", err)
	}
	if hostpathtest.Mounted(t, cl.TargetPath) {
		t.Errorf("a mount is left at %s after the claim's release", cl.TargetPath)
		for range 4 {
			_ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH)
		}
	}
}
