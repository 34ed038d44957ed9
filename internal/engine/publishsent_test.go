package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// linkPathTo is a MemConfig.MakeTarget or MakeStaging: a plugin whose NodePublishVolume
// "publishes" (or NodeStageVolume "stages") by putting a symlink to dest (its own mount, a
// directory of its own) at the path it was given, in place of anything there.
func linkPathTo(dest string) func(string) error {
	return func(path string) error {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return os.Symlink(dest, path)
	}
}

// checkUnpublishedFirst checks how volume v's claim, whose target plugin p linked after a
// NodePublishVolume whose answer volctl never accepted, was undone (what): the plugin was sent
// NodeUnpublishVolume (its chance to remove its link and what it leads to) before any
// NodeUnstageVolume or ControllerUnpublishVolume, finding its link at the target (fi, lerr:
// the target's Lstat while that RPC was held, when held is set); it holds no target and no
// staging of the volume after; no claim is left; no event blames a hand for the link.
func checkUnpublishedFirst(t *testing.T, h *harness, p *csitest.MemPlugin, what string, fi os.FileInfo, lerr error, held bool) {
	t.Helper()
	rpcs := volumeRPCs(p)
	unpub := slices.Index(rpcs, csi.RPCNodeUnpublishVolume)
	if unpub < 0 {
		t.Errorf("%s: the plugin was sent %v; want NodeUnpublishVolume: the link at the target may be its answer to a NodePublishVolume it was sent, and its mount is behind it", what, rpcs)
	}
	for _, rpc := range []string{csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		if i := slices.Index(rpcs, rpc); i >= 0 && (unpub < 0 || i < unpub) {
			t.Errorf("%s: the plugin was sent %v; want NodeUnpublishVolume before %s: the volume was taken away under the plugin's publication", what, rpcs, rpc)
		}
	}
	if held && (lerr != nil || fi.Mode()&os.ModeSymlink == 0) {
		t.Errorf("%s: the target while NodeUnpublishVolume was held: %v, %v; want the plugin's link still there for it to remove", what, fi, lerr)
	}
	if tg := p.Targets(h.externalID("v")); len(tg) != 0 {
		t.Errorf("%s: the plugin still holds volume \"v\" published at %v; want it unpublished", what, tg)
	}
	if staged, ok := p.StagingPath(h.externalID("v")); ok {
		t.Errorf("%s: the plugin still holds volume \"v\" staged at %s", what, staged)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("%s: claims left %+v; want none", what, live)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "target-link-removed", VolumeID: "v"})
	if err != nil || len(evs) != 0 {
		t.Errorf("%s: target-link-removed events = %+v, %v; want none: the link was the plugin's, not a hand's", what, evs, err)
	}
}

// heldUnpublish runs drive with the next NodeUnpublishVolume held at a gate, and returns the
// target's Lstat while it was held (held false when drive returned without sending it), and
// drive's error.
func heldUnpublish(t *testing.T, h *harness, target string, drive func() error) (fi os.FileInfo, lerr error, held bool, err error) {
	t.Helper()
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})
	done := make(chan error, 1)
	go func() { done <- drive() }()
	deadline := time.Now().Add(10 * time.Second)
	for h.faults.Held() < 1 {
		select {
		case err := <-done:
			close(gate)
			h.faults.Clear(csi.RPCNodeUnpublishVolume)
			return nil, nil, false, err
		default:
		}
		if time.Now().After(deadline) {
			close(gate)
			t.Fatal("NodeUnpublishVolume neither held nor the operation done")
		}
		time.Sleep(time.Millisecond)
	}
	fi, lerr = os.Lstat(target)
	close(gate)
	return fi, lerr, true, <-done
}

// (a) A plugin whose NodePublishVolume links the target to its own mount and answers
// UNAVAILABLE (every attempt: its answers lost): the claim is left node-staged, its record
// holding "NodePublishVolume's failure (Unavailable)". Reconcile took the plugin's link for a
// hand's (the record's failure "not a NodePublishVolume cut off"), put the claim back to
// controller-published and rolled it back with no NodeUnpublishVolume: the plugin's mount
// leaked, the volume unstaged and detached under it. The claim records that its
// NodePublishVolume may have been sent: the link is the plugin's, unpublished first.
func TestLinkAfterAnUnavailablePublishIsUnpublishedFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MakeTarget = linkPathTo(t.TempDir()) })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Lost: true, Times: 10})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with every NodePublishVolume answered UNAVAILABLE succeeded")
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimNodeStaged || live[0].LastCode != "Unavailable" {
		t.Fatalf("claims %+v; want one node-staged, its record holding UNAVAILABLE", live)
	}
	target := live[0].TargetPath
	h.faults.Clear()
	h.mem.ResetCalls()
	var rep ReconcileReport
	fi, lerr, held, _ := heldUnpublish(t, h, target, func() error {
		var err error
		rep, err = h.e.Reconcile(h.ctx)
		return err
	})
	checkUnpublishedFirst(t, h, h.mem, "reconcile after NodePublishVolume answered UNAVAILABLE after the plugin linked the target", fi, lerr, held)
	for _, p := range rep.Problems {
		if strings.Contains(p.Message, "by hand or by another program") || strings.Contains(p.Message, "not the plugin's answer") {
			t.Errorf("reconcile blamed a hand for the plugin's link: %s", p.Message)
		}
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Errorf("second reconcile: %+v, %v; want nothing to do (the claim settled)", rep.Problems, err)
	}
}

// (b) The same plugin answering INVALID_ARGUMENT after it linked the target: a final error,
// so the claim is rolled back at once, and the rollback sends NodeUnpublishVolume first, its
// link left there for it.
func TestLinkAfterAnInvalidArgumentPublishIsUnpublishedFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MakeTarget = linkPathTo(t.TempDir()) })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Lost: true, Code: codes.InvalidArgument, Times: 1})
	target := publishPath(h.dir, "a", "v", false, spec.FileSystem, spec.SingleNodeWriter)
	fi, lerr, held, err := heldUnpublish(t, h, target, func() error {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("claim with NodePublishVolume answered INVALID_ARGUMENT = %v; want it rolled back", err)
	}
	checkUnpublishedFirst(t, h, h.mem, "the rollback of NodePublishVolume answered INVALID_ARGUMENT after the plugin linked the target", fi, lerr, held)
}

// (c) NodePublishVolume cut off (DeadlineExceeded, every attempt) after the plugin linked the
// target, then a reconcile pass finding the plugin's socket gone writes its own failure over
// the claim's record ("a failure met before it was sent"), then the plugin back: the next
// pass took the link for a hand's and rolled back with no NodeUnpublishVolume.
func TestLinkAfterACutOffPublishAndAGoneSocketIsUnpublishedFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MakeTarget = linkPathTo(t.TempDir()) })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Lost: true, Code: codes.DeadlineExceeded, Times: 10})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with every NodePublishVolume cut off succeeded")
	}
	h.faults.Clear()
	cl := h.reconcileWithSocketGone(csi.RPCNodePublishVolume)
	h.mem.ResetCalls()
	fi, lerr, held, _ := heldUnpublish(t, h, cl.TargetPath, func() error { _, err := h.e.Reconcile(h.ctx); return err })
	checkUnpublishedFirst(t, h, h.mem, "reconcile after a cut-off NodePublishVolume and a pass with the socket gone", fi, lerr, held)
}

// (d) A restore: a published claim whose mounts a reboot took, the plugin back with its state
// lost. The restore's NodePublishVolume links the target and answers an error (the claim held,
// degraded, as for any error), and the claim is released. The release took the link for one
// put in place of the accepted target (the claim recorded accepted since its first publish),
// removed it unfollowed before NodeUnpublishVolume, and the plugin, finding its target gone,
// answered OK and kept its mount behind the link while the volume was unstaged and detached.
// The restore's NodePublishVolume makes the target the plugin's again until it is accepted.
func TestLinkAfterARestoresFailedPublishIsUnpublishedFirst(t *testing.T) {
	t.Parallel()
	for _, code := range []codes.Code{codes.Unavailable, codes.InvalidArgument} {
		t.Run(code.String(), func(t *testing.T) {
			h := newHarness(t, nil)
			p, target := h.restoreLostByALinkingPlugin(t, code)
			live := h.liveClaims("v")
			if len(live) != 1 || !live[0].Degraded || live[0].State != store.ClaimNodeStaged {
				t.Fatalf("claims after the restore's NodePublishVolume failed = %+v; want a's held, degraded, node-staged", live)
			}
			if fi, err := os.Lstat(target); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the target after the restore: %v, %v; want the plugin's link", fi, err)
			}
			h.faults.Clear()
			p.ResetCalls()
			fi, lerr, held, err := heldUnpublish(t, h, target, func() error { _, err := h.e.Release(h.ctx, "v", "a"); return err })
			if err != nil {
				t.Fatalf("release: %v", err)
			}
			checkUnpublishedFirst(t, h, p, "the release of a claim whose restore's NodePublishVolume failed after the plugin linked the target", fi, lerr, held)
		})
	}
}

// (a') The plugin of (a) mounting beside the target, in the claim's own publish directory
// (publish/<alloc>/<volume>/mnt), and linking the target there: a link into volctl's publish
// directory, but the claim's own, not another claim's: still the plugin's, unpublished first.
// This plugin's NodeUnpublishVolume removes its link and leaves its mount beside it: the
// rollback stops there, saying to unmount it, and the volume is neither unstaged nor detached
// under it.
func TestLinkBesideTheTargetAfterAnUnavailablePublishIsUnpublishedFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.MakeTarget = func(target string) error {
			mnt := filepath.Join(filepath.Dir(target), "mnt")
			if err := os.MkdirAll(mnt, 0o750); err != nil {
				return err
			}
			return linkPathTo(mnt)(target)
		}
	})
	h.create(volume("v"))
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Lost: true, Times: 10})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with every NodePublishVolume answered UNAVAILABLE succeeded")
	}
	target := publishPath(h.dir, "a", "v", false, spec.FileSystem, spec.SingleNodeWriter)
	h.faults.Clear()
	h.mem.ResetCalls()
	fi, lerr, held, _ := heldUnpublish(t, h, target, func() error { _, err := h.e.Reconcile(h.ctx); return err })
	if !held || lerr != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("reconcile's NodeUnpublishVolume: held %t, the target then %v, %v; want it sent, finding the plugin's link", held, fi, lerr)
	}
	if rpcs := h.rpcs(); slices.Contains(rpcs, csi.RPCNodeUnstageVolume) || slices.Contains(rpcs, csi.RPCControllerUnpublishVolume) {
		t.Errorf("the plugin was sent %v; want no NodeUnstageVolume nor ControllerUnpublishVolume while its mount beside the target is left", rpcs)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimUnpublishing || !strings.Contains(live[0].LastError, "unmount "+filepath.Join(filepath.Dir(target), "mnt")) {
		t.Errorf("claims %+v; want a's left unpublishing, saying to unmount the plugin's mount beside the target", live)
	}
}

// reconcileWithSocketGone stops the plugin, runs a reconcile pass that finds its socket gone,
// which writes its own failure over volume "v"'s claim's record (a failure met before any RPC
// was sent, where the record held rpc's), and serves the plugin again; it returns the claim as
// that pass left it.
func (h *harness) reconcileWithSocketGone(rpc string) store.Claim {
	h.t.Helper()
	h.stopServe()
	h.e.Reconcile(h.ctx)
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].LastRPC == rpc {
		h.t.Fatalf("claims after a reconcile with the socket gone = %+v; want one, its record of %s overwritten", live, rpc)
	}
	h.stopServe = csitest.ServeAt(h.t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
	return live[0]
}

// restoreLostByALinkingPlugin claims volume v for alloc a, reboots, and serves in the plugin's
// place one whose NodePublishVolume links the target to a mount of its own and whose answer is
// lost (code; OK for no code), then runs reconcile: the restore's publish fails after the
// plugin linked claim a's target, which it returns.
func (h *harness) restoreLostByALinkingPlugin(t *testing.T, code codes.Code) (*csitest.MemPlugin, string) {
	t.Helper()
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	target := publishPath(h.dir, "a", "v", false, spec.FileSystem, spec.SingleNodeWriter)
	h.stopServe()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	cfg.MakeTarget = linkPathTo(t.TempDir())
	p := csitest.NewMemPlugin(cfg)
	p.AddVolume(csi.Volume{ID: h.externalID("v")})
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(p), csitest.WithFaults(h.faults))
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Lost: true, Code: code, Times: 10})
	h.e.Reconcile(h.ctx)
	return p, target
}
