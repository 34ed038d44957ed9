package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
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
	bin := buildVolctl(t, failpointsTag)
	elsewhere := t.TempDir() // the plugin's own directory, where its link leads
	cfg := csitest.DefaultMemConfig()
	cfg.MakeTarget = func(target string) error { return os.Symlink(elsewhere, target) }
	mem := csitest.NewMountingMemPlugin(t, cfg)
	var (
		mu     sync.Mutex
		sawDir []bool // per NodeUnpublishVolume: the plugin's link at its target when it came
	)
	seen := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasSuffix(info.FullMethod, "/NodeUnpublishVolume") {
			if r, ok := req.(interface{ GetTargetPath() string }); ok {
				fi, err := os.Lstat(r.GetTargetPath())
				mu.Lock()
				sawDir = append(sawDir, err == nil && fi.Mode()&os.ModeSymlink != 0)
				mu.Unlock()
			}
		}
		return handler(ctx, req)
	}
	socket, _ := csitest.Serve(t, csitest.WithServer(mem), csitest.WithInterceptor(seen))
	env := &hostEnv{t: t, state: t.TempDir(), socket: socket}
	env.ok("plugin", "register", "--id", "hp", "--socket", socket)
	env.createVolume("vol", spec.SingleNodeWriter)
	// The one step of the rollback before its NodeUnpublishVolume: the claim recorded
	// unpublishing, checkTarget having refused the plugin's link.
	const fp = "release:unpublishing"
	linkEvents := func() int {
		return strings.Count(env.ok("events", "--kind", "target-link-removed", "--json"), `"target-link-removed"`)
	}
	before := linkEvents()
	env.crash(bin, fp, "volume", "claim", "vol", "--alloc", "a")
	mu.Lock()
	sent := len(sawDir)
	mu.Unlock()
	if sent != 0 {
		t.Fatalf("killed at %s: %d NodeUnpublishVolume calls before the kill; want none, the reconcile's the first", fp, sent)
	}
	env.ok("reconcile")
	env.checkInvariants()
	mu.Lock()
	saw := slices.Clone(sawDir)
	mu.Unlock()
	if len(saw) == 0 || !saw[0] {
		t.Errorf("rollback killed at %s, then reconcile: NodeUnpublishVolume found the plugin's link at the target: %v (one per call); want reconcile's first to find it, as the uncut rollback's does", fp, saw)
	}
	if n := linkEvents() - before; n != 0 {
		t.Errorf("rollback killed at %s, then reconcile: %d target-link-removed events blame a hand or a program for the plugin's own link:\n%s",
			fp, n, env.ok("events", "--kind", "target-link-removed"))
	}
	if out := env.ok("volume", "status", "vol", "--json"); strings.Contains(out, `"alloc": "a"`) {
		t.Fatalf("rollback killed at %s: the claim is still there after reconcile:\n%s", fp, out)
	}
	env.ok("reconcile") // nothing left to do
}
