package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestRetriedPublishDoesNotTakeAMountThatWasThereBeforeForTheVolume: a fresh claim's target
// already has a file system mounted on it, by hand or by another program (a tmpfs), before
// the claim. The claim's first NodePublishVolume is answered UNAVAILABLE without the plugin
// acting (it was restarting). Before the retry, retryLooking's look (publishedByLastAttempt)
// finds something mounted at the target that checkTarget accepts, and takes it for what the
// failed attempt mounted: NodePublishVolume is never sent again, and the claim is reported
// published (exit 0) with the stranger's tmpfs as the volume; the alloc writes into memory,
// lost at the next reboot, and nothing reaches the volume. Without the look, the retry reached
// the plugin, which refuses a target that is "already a mount point of something else". The
// look may take a mount for the last attempt's only when the target held none before the first
// attempt was sent. Correct: the claim is not published onto the mount that was there before.
// Found by helper review79 (resend), in this round's own change.
func TestRetriedPublishDoesNotTakeAMountThatWasThereBeforeForTheVolume(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	h := newHostpathEngineAt(t, hostpathtest.MountDir(t), hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true})
	sv := spec.Volume{ID: "data", Name: "data", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	target := publishPath(h.e.StateDir(), "a", "data", false, spec.FileSystem, spec.SingleNodeWriter)
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting a stranger's tmpfs at the target: %v", err)
	}
	unmountAllAt(t, target)
	if err := os.WriteFile(filepath.Join(target, "stranger.txt"), []byte("not the volume"), 0o644); err != nil {
		t.Fatal(err)
	}

	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Code: codes.Unavailable, Message: "plugin restarting", Times: 1})
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a"})
	sent := h.faults.Calls(csi.RPCNodePublishVolume)
	if err == nil {
		_, serr := os.Stat(filepath.Join(cl.TargetPath, "stranger.txt"))
		t.Fatalf("claim reported published at %s (NodePublishVolume sent %d time(s), the first answered UNAVAILABLE without acting), its target the tmpfs mounted there before the claim (stranger.txt there: %v); "+
			"want the claim refused: a mount that was at the target before the publish is not the last attempt's", cl.TargetPath, sent, serr == nil)
	}
	t.Logf("claim: %v (NodePublishVolume sent %d time(s))", err, sent)
	if st, ierr := h.e.ClaimInfo(h.ctx, "data", "a"); ierr == nil && st.State == string(store.ClaimPublished) {
		t.Errorf("claim recorded published after an error: %+v", st)
	}
	if sent != 2 {
		t.Errorf("NodePublishVolume sent %d time(s); want the retry sent (the mount at the target was there before the publish), which the plugin refuses", sent)
	}
	if b, err := os.ReadFile(filepath.Join(target, "stranger.txt")); err != nil || string(b) != "not the volume" {
		t.Errorf("the stranger's tmpfs at the target lost what it held: %q, %v", b, err)
	}
}

// TestRestoreStageThatMountedThenAnsweredInternalStacksNoSecondMountWithTwoClaims: the case of
// TestRestoreStageThatMountedThenAnsweredInternalStacksNoSecondMount with two claims of a
// multi-writer volume (two allocs) instead of one. After a reboot, reconcile restores both;
// the first restore's NodeStageVolume mounts the staging path and answers INTERNAL, so the
// staging stays recorded unstaged with the plugin's mount there and the claim held node-staged,
// degraded, its target empty. The other claim's restore (and every re-drive) finds the staging
// mounted though recorded unstaged, but unstageUnrecorded counts the first claim (node-staged,
// degraded, publishing nothing: the staging is recorded unstaged, its target unmounted) as
// "a staging other claims use", returns before its new degraded branch, and NodeStageVolume is
// sent over the mount: a plugin that mounts without looking first stacks a second one, and the
// last release's NodeUnstageVolume, unmounting once, leaves the volume mounted at the staging
// path. Correct: a degraded claim whose target holds nothing does not use a staging recorded
// unstaged; when every such claim's target holds nothing, the staging is unstaged (their empty
// targets unpublished first) and staged once, leaving one mount, and both release cleanly.
// Found by helper review79 (resend), in this round's own change.
func TestRestoreStageThatMountedThenAnsweredInternalStacksNoSecondMountWithTwoClaims(t *testing.T) {
	t.Parallel()
	h, _, staging := twoClaimsRebooted(t, csitest.WithInterceptor(remountingStage()))

	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Lost: true, Code: codes.Internal, Message: "write state file: failed after the mount", Times: 1})
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("first pass: %v, problems %+v", err, rep.Problems)
	if len(rep.Problems) == 0 {
		t.Fatalf("precondition: first pass reported no problem; the restore's NodeStageVolume was to mount and answer INTERNAL")
	}
	for range 2 { // the passes that finish the restores
		rep, err = h.e.Reconcile(h.ctx)
		t.Logf("next pass: %v, problems %+v", err, rep.Problems)
	}
	if err != nil || len(rep.Problems) != 0 {
		t.Errorf("the last pass: %v, problems %+v; want both claims restored", err, rep.Problems)
	}
	for _, alloc := range []string{"a", "b"} {
		if st, err := h.e.ClaimInfo(h.ctx, "data", alloc); err != nil || st.State != string(store.ClaimPublished) || st.Degraded {
			t.Errorf("alloc %s's claim after the passes: %+v, %v; want published, restored", alloc, st, err)
		}
	}
	if n := mountsStackedAt(t, staging); n != 1 {
		t.Errorf("after the passes that restored both claims, %d mounts at the staging %s (NodeStageVolume sent %d time(s) in all, NodeUnstageVolume %d, onto the staging the INTERNAL stage mounted); want one",
			n, staging, h.faults.Calls(csi.RPCNodeStageVolume), h.faults.Calls(csi.RPCNodeUnstageVolume))
	}
	for _, alloc := range []string{"a", "b"} {
		if _, err := h.e.Release(h.ctx, "data", alloc); err != nil {
			t.Errorf("release of alloc %s's claim after the restore: %v", alloc, err)
		}
	}
	if hostpathtest.Mounted(t, staging) {
		t.Errorf("a mount is left at the staging %s after both claims' release", staging)
	}
}

// tableUnreadableWhile is the kernel's mount table whose MountsUnder (the read mountsLeft and
// mountsAt make) fails with a read error while fail is set.
type tableUnreadableWhile struct {
	kernelMounts
	fail atomic.Bool
}

func (m *tableUnreadableWhile) MountsUnder(dir string) (map[string]bool, error) {
	if m.fail.Load() {
		return nil, store.MountTableUnreadable(errors.New("read /proc/self/mountinfo: input/output error"))
	}
	return m.kernelMounts.MountsUnder(dir)
}

// mountsThenResetWhileTableUnreadable is a NodePublishVolume that, the first time, mounts the
// target and then answers UNAVAILABLE (a connection reset once the plugin acted), the host's
// mount table turning unreadable meanwhile (m.fail); asked again, the table reads again, and it
// mounts without looking first, as remountingWithALateAnswer does: a second mount over the first.
func mountsThenResetWhileTableUnreadable(m *tableUnreadableWhile) grpc.UnaryServerInterceptor {
	var n atomic.Int32
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*csipb.NodePublishVolumeRequest)
		if !ok {
			return handler(ctx, req)
		}
		if n.Add(1) == 1 {
			if _, err := handler(ctx, req); err != nil {
				return nil, err
			}
			m.fail.Store(true)
			return nil, status.Error(codes.Unavailable, "connection reset after the mount")
		}
		m.fail.Store(false)
		return remountOver(ctx, r.GetTargetPath(), req, handler)
	}
}

// TestRetriedPublishWhoseLookCannotReadTheMountTableIsNotSentBlind: a fresh claim's
// NodePublishVolume mounts the target and answers UNAVAILABLE. Before sending it again,
// retryLooking looks (publishedByLastAttempt), and the read of the mount table fails
// (mountsLeft: the target is a mount point, so the table is read). publishedByLastAttempt
// swallows the error as "nothing mounted there" and the RPC is sent again over the mount the
// first attempt made: a plugin that mounts without looking first stacks a second mount, the
// claim is reported published (exit 0), and its release, unmounting once, leaves the volume
// mounted at the target. The stage's look in the same change (unstageUnrecorded) returns the
// same read error, and the design holds that a mount table that cannot be read cannot say that
// nothing is mounted. Correct: the look's error stops the retry, the claim's error naming the
// mount table read, and NodePublishVolume is not sent over the first attempt's mount.
// Found by helper review79 (resend), in this round's own change.
func TestRetriedPublishWhoseLookCannotReadTheMountTableIsNotSentBlind(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	m := &tableUnreadableWhile{}
	h := newHostpathEngineAt(t, hostpathtest.MountDir(t), hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true},
		csitest.WithInterceptor(mountsThenResetWhileTableUnreadable(m)))
	h.e.Close()
	e, err := Open(h.ctx, Config{StateDir: h.state, Retry: fastRetry, Mounts: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h.e = e
	sv := spec.Volume{ID: "data", Name: "data", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	target := publishPath(h.e.StateDir(), "a", "data", false, spec.FileSystem, spec.SingleNodeWriter)
	unmountAllAt(t, target)
	_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a"})
	m.fail.Store(false)
	t.Logf("claim: %v", err)
	sent := h.faults.Calls(csi.RPCNodePublishVolume)
	n := mountsStackedAt(t, target)
	if err == nil || !strings.Contains(err.Error(), "mount table") {
		t.Errorf("claim whose retry's look could not read the mount table: %v; want its error naming the mount table read", err)
	}
	if sent != 1 || n > 1 {
		t.Errorf("NodePublishVolume sent %d time(s), %d mounts stacked at the target %s, claim error %v: the retry was sent while its look could not read the mount table "+
			"(the error taken for \"nothing mounted there\"); want it sent once, the claim's error naming the mount table read", sent, n, target, err)
	}
}
