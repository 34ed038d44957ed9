package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestCrashInARollbackLeavesThePluginsOwnLink kills a claim's rollback before its first
// NodeUnpublishVolume, so that the reconcile that finishes it is the one to send it: the plugin
// made the target a symlink to a directory of its own, checkTarget refused it, and that
// NodeUnpublishVolume is the plugin's chance to remove the link and what it leads to
// (TestRollbackLeavesThePluginsOwnLinkToItsNodeUnpublish, uncut). The reconcile must do what
// the uncut rollback does: send NodeUnpublishVolume with the link still there, and record no
// target-link-removed event blaming a hand or a program. Before, a rollback resumed from
// unpublishing could not tell that the target was never accepted: it removed the plugin's link
// first, the plugin answered OK for a target gone, and the event said the link stood in place
// of a published target. A kill after that first NodeUnpublishVolume (its answer, or a later
// step) leaves the plugin's link removed by the plugin: nothing there for reconcile to remove,
// nothing this test could see; a resumed rollback whose NodeUnpublishVolume failed is
// TestResumedRollbackLeavesThePluginsOwnLinkToItsNodeUnpublish's.
func TestCrashInARollbackLeavesThePluginsOwnLink(t *testing.T) {
	t.Parallel()
	lp := newLinkingPlugin(t)
	env, bin := lp.env, lp.bin
	// The one step of the rollback before its NodeUnpublishVolume: the claim recorded
	// unpublishing, checkTarget having refused the plugin's link.
	const fp = "release:unpublishing"
	before := lp.linkEvents()
	env.crash(bin, fp, "volume", "claim", "vol", "--alloc", "a")
	if _, saw := lp.seen(); len(saw) != 0 {
		t.Fatalf("killed at %s: %d NodeUnpublishVolume calls before the kill; want none, the reconcile's the first", fp, len(saw))
	}
	env.ok("reconcile")
	env.checkInvariants()
	if _, saw := lp.seen(); len(saw) == 0 || !saw[0] {
		t.Errorf("rollback killed at %s, then reconcile: NodeUnpublishVolume found the plugin's link at the target: %v (one per call); want reconcile's first to find it, as the uncut rollback's does", fp, saw)
	}
	if n := lp.linkEvents() - before; n != 0 {
		t.Errorf("rollback killed at %s, then reconcile: %d target-link-removed events blame a hand or a program for the plugin's own link:\n%s",
			fp, n, env.ok("events", "--kind", "target-link-removed"))
	}
	if out := env.ok("volume", "status", "vol", "--json"); strings.Contains(out, `"alloc": "a"`) {
		t.Fatalf("rollback killed at %s: the claim is still there after reconcile:\n%s", fp, out)
	}
	env.ok("reconcile") // nothing left to do
}

// TestCrashAfterNodePublishOfALinkedTarget kills a claim right after NodePublishVolume answered
// OK, before checkTarget looked at what the plugin made: a symlink at the target, to a
// directory of the plugin's own. Uncut, checkTarget refuses the link and the claim is rolled
// back, its NodeUnpublishVolume finding the link there for the plugin to remove
// (TestRollbackLeavesThePluginsOwnLinkToItsNodeUnpublish). Resumed by reconcile from
// node-staged, the claim must end the same way: rolled back, with the same NodeUnpublishVolume,
// no target-link-removed event blaming a hand or a program, and the history saying why. Before,
// reconcile's forward path refused the link at the target ("remove the link ... and claim
// again") before anything was sent, left the claim node-staged, and did so every pass: nothing
// ever rolled the claim back.
func TestCrashAfterNodePublishOfALinkedTarget(t *testing.T) {
	t.Parallel()
	lp := newLinkingPlugin(t)
	env, bin := lp.env, lp.bin
	before := lp.linkEvents()
	const fp = "rpc:NodePublishVolume"
	env.crash(bin, fp, "volume", "claim", "vol", "--alloc", "a")
	targets, _ := filepath.Glob(filepath.Join(env.state, "publish", "a", "vol", "*"))
	if len(targets) != 1 {
		t.Fatalf("killed at %s: targets %v; want the claim's one", fp, targets)
	}
	if fi, err := os.Lstat(targets[0]); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("killed at %s: the target %s is not the plugin's link (%v): the test's premise does not hold", fp, targets[0], err)
	}
	// The pass rolls the claim back: a problem it reports (the plugin's bad answer), once.
	out, err := env.run(nil, "reconcile")
	if err == nil || !strings.Contains(out, "symlink") {
		t.Errorf("killed at %s, then reconcile: %v; want the pass to report the claim rolled back over the plugin's link:\n%s", fp, err, out)
	}
	if out := env.ok("volume", "status", "vol", "--json"); strings.Contains(out, `"alloc": "a"`) {
		t.Fatalf("killed at %s, then reconcile: the claim is still there (reconcile refuses it every pass, nothing rolls it back):\n%s\nreconcile said:\n%s", fp, out, env.ok("volume", "status", "vol"))
	}
	env.ok("reconcile") // nothing left to do
	env.checkInvariants()
	published, saw := lp.seen()
	if published != 1 {
		t.Errorf("NodePublishVolume sent %d times; want once, the killed command's (the rollback sends it no more)", published)
	}
	if len(saw) == 0 || !saw[0] {
		t.Errorf("killed at %s, then reconcile: NodeUnpublishVolume found the plugin's link at the target: %v (one per call); want the rollback's first to find it, as the uncut rollback's does", fp, saw)
	}
	if n := lp.linkEvents() - before; n != 0 {
		t.Errorf("killed at %s, then reconcile: %d target-link-removed events blame a hand or a program for the plugin's own link:\n%s",
			fp, n, env.ok("events", "--kind", "target-link-removed"))
	}
	past := claimHistory(t, env.state, "vol")
	if len(past) != 1 || past[0].Alloc != "a" || past[0].Outcome != store.OutcomeRolledBack {
		t.Fatalf("killed at %s, then reconcile: history %+v; want alloc \"a\"'s claim rolled back", fp, past)
	}
	if ev := env.ok("events", "--kind", "release", "--alloc", "a"); !strings.Contains(ev, "rolled-back") || !strings.Contains(ev, "symlink") {
		t.Errorf("killed at %s, then reconcile: the release event does not say the claim was rolled back over the plugin's link:\n%s", fp, ev)
	}
}

// TestCrashAfterNodePublishOfALinkedTargetThenAGoneSocket is
// TestCrashAfterNodePublishOfALinkedTarget with a reconcile pass between the kill and the
// plugin's return that finds its socket gone: that pass writes its own failure over the claim's
// record (a failure met before any RPC was sent). The pass after it, the plugin back, took the
// plugin's link for a hand's (the record no longer showing a NodePublishVolume cut off), put
// the claim back to controller-published and rolled it back with no NodeUnpublishVolume: the
// plugin's publication left behind, the volume unstaged and detached under it (or the rollback
// refused by a plugin that checks, every pass). The claim records that its NodePublishVolume
// may have been sent, whatever is written over its last error since: the link is the plugin's,
// and its NodeUnpublishVolume comes first, finding it there.
func TestCrashAfterNodePublishOfALinkedTargetThenAGoneSocket(t *testing.T) {
	t.Parallel()
	lp := newLinkingPlugin(t)
	env, bin := lp.env, lp.bin
	const fp = "rpc:NodePublishVolume"
	env.crash(bin, fp, "volume", "claim", "vol", "--alloc", "a")
	lp.stop()
	if out, err := env.run(nil, "reconcile"); err == nil {
		t.Fatalf("killed at %s, the plugin stopped, then reconcile: it succeeded:\n%s", fp, out)
	}
	lp.serve()
	env.run(nil, "reconcile") // reports the claim rolled back over the plugin's link
	if out := env.ok("volume", "status", "vol", "--json"); strings.Contains(out, `"alloc": "a"`) {
		t.Fatalf("killed at %s, a pass with the socket gone, then reconcile: the claim is still there:\n%s\n%s", fp, out, env.ok("volume", "status", "vol"))
	}
	env.ok("reconcile") // nothing left to do
	env.checkInvariants()
	if _, saw := lp.seen(); len(saw) == 0 || !saw[0] {
		t.Errorf("killed at %s, a pass with the socket gone, then reconcile: NodeUnpublishVolume found the plugin's link at the target: %v (one per call); want the rollback's first to find it", fp, saw)
	}
	if ev := env.ok("events", "--kind", "release", "--alloc", "a"); !strings.Contains(ev, "rolled-back") || strings.Contains(ev, "by hand or by another program") {
		t.Errorf("killed at %s, a pass with the socket gone, then reconcile: the release event does not say the claim was rolled back over the plugin's link, or blames a hand:\n%s", fp, ev)
	}
}

// claimHistory reads volume's freed claims, newest first, from the state dir's store.
func claimHistory(t *testing.T, state, volume string) []store.PastClaim {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var past []store.PastClaim
	if err := st.View(ctx, func(tx *store.Tx) error {
		past, err = tx.History(volume, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return past
}

// linkingPlugin is a hostEnv whose in-memory plugin (real mounts) "publishes" by making the
// target a symlink to a directory of its own, volctl built with failpoints to kill, and what the
// plugin was sent.
type linkingPlugin struct {
	env *hostEnv
	bin string
	mu  sync.Mutex
	// published counts NodePublishVolume calls; sawLink is, per NodeUnpublishVolume, whether
	// the plugin's link was at its target when it came.
	published int
	sawLink   []bool
	// serve serves the plugin again at its socket, stopped by stop (a plugin process killed
	// and started again).
	serve func()
	stop  func()
}

// newLinkingPlugin serves the plugin, registers it as "hp" and creates the volume "vol".
func newLinkingPlugin(t *testing.T) *linkingPlugin {
	lp := &linkingPlugin{bin: buildVolctl(t, failpointsTag)}
	elsewhere := t.TempDir() // the plugin's own directory, where its link leads
	cfg := csitest.DefaultMemConfig()
	cfg.MakeTarget = func(target string) error { return os.Symlink(elsewhere, target) }
	mem := csitest.NewMountingMemPlugin(t, cfg)
	seen := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		lp.mu.Lock()
		switch {
		case strings.HasSuffix(info.FullMethod, "/NodePublishVolume"):
			lp.published++
		case strings.HasSuffix(info.FullMethod, "/NodeUnpublishVolume"):
			if r, ok := req.(interface{ GetTargetPath() string }); ok {
				fi, err := os.Lstat(r.GetTargetPath())
				lp.sawLink = append(lp.sawLink, err == nil && fi.Mode()&os.ModeSymlink != 0)
			}
		}
		lp.mu.Unlock()
		return handler(ctx, req)
	}
	socket, stop := csitest.Serve(t, csitest.WithServer(mem), csitest.WithInterceptor(seen))
	lp.stop = stop
	lp.serve = func() { lp.stop = csitest.ServeAt(t, socket, csitest.WithServer(mem), csitest.WithInterceptor(seen)) }
	lp.env = &hostEnv{t: t, state: t.TempDir(), socket: socket}
	lp.env.ok("plugin", "register", "--id", "hp", "--socket", socket)
	lp.env.createVolume("vol", spec.SingleNodeWriter)
	return lp
}

// seen is what the plugin was sent so far.
func (lp *linkingPlugin) seen() (published int, sawLink []bool) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.published, slices.Clone(lp.sawLink)
}

// linkEvents counts the target-link-removed events recorded.
func (lp *linkingPlugin) linkEvents() int {
	return strings.Count(lp.env.ok("events", "--kind", "target-link-removed", "--json"), `"target-link-removed"`)
}

// TestCrashAfterNodeStageOfALinkedStagingPath kills a claim right after NodeStageVolume
// answered OK, before volctl looked at what the plugin made: a symlink in place of the
// staging directory, to a directory of the plugin's own. Uncut, the claim is refused there
// and rolled back, its NodeUnstageVolume finding the link for the plugin to remove
// (engine's TestPluginThatLinksItsStagingPathIsRolledBack). Resumed by reconcile from
// controller-published, it must end the same way: rolled back, NodePublishVolume never sent,
// the rollback's NodeUnstageVolume finding the plugin's link there, no target-link-removed
// event blaming a hand or a program, and the history saying why. Before, reconcile's forward
// path refused the link at the staging path on every pass ("replace it with a real directory,
// or use the path it points to"), and nothing ever rolled the claim back.
func TestCrashAfterNodeStageOfALinkedStagingPath(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	elsewhere := t.TempDir() // the plugin's own directory, where its link leads
	cfg := csitest.DefaultMemConfig()
	cfg.MakeStaging = func(staging string) error {
		if err := os.Remove(staging); err != nil {
			return err
		}
		return os.Symlink(elsewhere, staging)
	}
	mem := csitest.NewMountingMemPlugin(t, cfg)
	var (
		mu        sync.Mutex
		published int
		sawLink   []bool // per NodeUnstageVolume, whether the plugin's link was at the staging path
	)
	seen := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mu.Lock()
		switch {
		case strings.HasSuffix(info.FullMethod, "/NodePublishVolume"):
			published++
		case strings.HasSuffix(info.FullMethod, "/NodeUnstageVolume"):
			if r, ok := req.(interface{ GetStagingTargetPath() string }); ok {
				fi, err := os.Lstat(r.GetStagingTargetPath())
				sawLink = append(sawLink, err == nil && fi.Mode()&os.ModeSymlink != 0)
			}
		}
		mu.Unlock()
		return handler(ctx, req)
	}
	socket, _ := csitest.Serve(t, csitest.WithServer(mem), csitest.WithInterceptor(seen))
	env := &hostEnv{t: t, state: t.TempDir(), socket: socket}
	env.ok("plugin", "register", "--id", "hp", "--socket", socket)
	env.createVolume("vol", spec.SingleNodeWriter)
	const fp = "rpc:NodeStageVolume"
	env.crash(bin, fp, "volume", "claim", "vol", "--alloc", "a")
	staging := filepath.Join(env.state, "staging", "hp", "vol")
	if fi, err := os.Lstat(staging); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("killed at %s: the staging path %s is not the plugin's link (%v): the test's premise does not hold", fp, staging, err)
	}
	out, err := env.run(nil, "reconcile")
	if err == nil || !strings.Contains(out, "symlink") {
		t.Errorf("killed at %s, then reconcile: %v; want the pass to report the claim rolled back over the plugin's link:\n%s", fp, err, out)
	}
	if out := env.ok("volume", "status", "vol", "--json"); strings.Contains(out, `"alloc": "a"`) {
		t.Fatalf("killed at %s, then reconcile: the claim is still there (reconcile refuses it every pass, nothing rolls it back):\n%s", fp, out)
	}
	env.ok("reconcile") // nothing left to do
	env.checkInvariants()
	mu.Lock()
	defer mu.Unlock()
	if published != 0 {
		t.Errorf("NodePublishVolume sent %d times through the plugin's staging link; want none", published)
	}
	if len(sawLink) == 0 || !sawLink[0] {
		t.Errorf("killed at %s, then reconcile: NodeUnstageVolume found the plugin's link at the staging path: %v (one per call); want the rollback's first to find it, as the uncut rollback's does", fp, sawLink)
	}
	if ev := env.ok("events", "--kind", "target-link-removed", "--json"); strings.Contains(ev, `"target-link-removed"`) {
		t.Errorf("killed at %s, then reconcile: a target-link-removed event blames a hand or a program for the plugin's own link:\n%s", fp, ev)
	}
	past := claimHistory(t, env.state, "vol")
	if len(past) != 1 || past[0].Alloc != "a" || past[0].Outcome != store.OutcomeRolledBack {
		t.Fatalf("killed at %s, then reconcile: history %+v; want alloc \"a\"'s claim rolled back", fp, past)
	}
	if ev := env.ok("events", "--kind", "release", "--alloc", "a"); !strings.Contains(ev, "rolled-back") || !strings.Contains(ev, "symlink") {
		t.Errorf("killed at %s, then reconcile: the release event does not say the claim was rolled back over the plugin's link:\n%s", fp, ev)
	}
}
