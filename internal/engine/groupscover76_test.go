package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestGroupStatusIsNotHeldByACoverThatDoesNotAnswer: alloc web[0]'s published target has a
// file system mounted over it that does not answer a look (a hard NFS mount whose server is
// gone: hungStack). `volume status` and the dashboard's claims bound that look (markCovered,
// viewLookBound, TestVolumeStatusIsNotHeldByACoverThatDoesNotAnswer), but `group status`
// (Groups) and the dashboard's groups (Dashboard) mark covers through markUnbound, which calls
// targetCovered with no bound: `volctl group status web` hangs for as long as the server is
// gone, and the dashboard's refresh with it (every refresh reads the groups). Correct: the look
// is bounded as markCovered bounds it; past the bound the claim is said covered (the table's
// word, "did not answer"), the alloc not counted ready.
// Found by helper review76 (groups).
func TestGroupStatusIsNotHeldByACoverThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	h, _, cl, _ := groupWithATargetCovered(t, false)
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) }) // before the group's stop (cleanups run last first)
	h.e.cfg.Mounts = hungStack{gate: gate}
	held := groupViewsWithin(h.ctx, h.e, 20*time.Second, func(what string, gs []GroupInfo) {
		for _, g := range gs {
			for _, a := range g.Allocs {
				for _, c := range a.Claims {
					if c.TargetPath == cl.TargetPath && c.Covered == "" {
						t.Errorf("%s: claim %q for alloc %q under a cover that does not answer: covered %q; want it said covered", what, c.VolumeID, a.Name, c.Covered)
					}
				}
			}
		}
	})
	if held != "" {
		t.Fatalf("%s held over 20s by a look at what covers %s's target %s that does not answer; volume status bounds the same look at %s",
			held, cl.Alloc, cl.TargetPath, viewLookBound)
	}
}

// TestAllocWithACoveredHeldTargetClaimsNothing: alloc web[0] holds its claim on volume "b",
// whose published target a tmpfs covers since; the group's spec is run again with a volume
// block "a" added before it. The held claim's cover can be told before anything is claimed
// (targetCovered, from the claim's record and the mount table), and admission refuses the claim
// again for it, a conflict. But refusedBeforeClaiming checks only mode, mount options,
// volume_mounts and destinations: the run first stages and publishes volume "a" for the alloc
// (ControllerPublish, NodeStage, NodePublish sent), then is refused at "b", and releases "a"
// again: RPCs to the plugin, a mount made and undone, and a teardown that may itself fail and
// leave "a" releasing, for an alloc the run could have refused before claiming anything, as the
// help, the design (refusedBeforeClaiming: "what each of its claims' admission would refuse that
// can be told before any is made") and TestAllocWithItsMountOptionsRemovedClaimsNothing promise.
// Correct: a held claim whose target is covered refuses the alloc before anything is claimed
// for it, naming the covered target and its umount, with no RPC sent for "a".
// Found by helper review76 (groups).
func TestAllocWithACoveredHeldTargetClaimsNothing(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("a", capab(spec.SingleNodeWriter)))
	h.create(volume("b", capab(spec.SingleNodeWriter)))
	block := func(name, source string) spec.VolumeRequest {
		return spec.VolumeRequest{Name: name, Type: "csi", Source: source, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	}
	first := spec.Group{Name: "web", Count: 1, Volumes: []spec.VolumeRequest{block("b", "b")}}
	info, err := h.e.RunGroup(h.ctx, first)
	if err != nil || len(info.Allocs) != 1 || len(info.Allocs[0].Claims) != 1 {
		t.Fatalf("run group = %+v, %v; want web[0] holding its claim on b", info, err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	target := info.Allocs[0].Claims[0].TargetPath
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	if _, err := os.Stat(filepath.Join(target, "nothing-here")); !os.IsNotExist(err) {
		t.Fatalf("stat under the tmpfs: %v", err)
	}
	rpcs := func() int {
		return h.faults.Calls(csi.RPCControllerPublishVolume) + h.faults.Calls(csi.RPCNodeStageVolume) + h.faults.Calls(csi.RPCNodePublishVolume)
	}
	before := rpcs()
	again := spec.Group{Name: "web", Count: 1, Volumes: []spec.VolumeRequest{block("a", "a"), block("b", "b")}}
	info, err = h.e.RunGroup(h.ctx, again)
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), target) {
		t.Fatalf("group run again with web[0]'s held target covered = %v; want a conflict naming %s (the precondition)", err, target)
	}
	if n := rpcs() - before; n != 0 {
		t.Errorf("%d ControllerPublish/NodeStage/NodePublish RPCs sent for volume \"a\" of alloc web[0], refused for its held claim's covered target %s; "+
			"want the alloc refused before anything is claimed for it", n, target)
	}
	if len(h.liveClaims("a")) != 0 {
		t.Errorf("volume a's claims after the refused run = %+v; want none", h.liveClaims("a"))
	}
}

// groupViewsWithin runs `group status web` (Groups) and a dashboard refresh at once, has check
// look at the groups each answers, and returns which of them (their names, joined) did not answer
// within within ("" when both did).
func groupViewsWithin(ctx context.Context, e *Engine, within time.Duration, check func(what string, gs []GroupInfo)) string {
	status := make(chan []GroupInfo, 1)
	go func() {
		gs, _ := e.Groups(ctx, "web")
		status <- gs
	}()
	dash := make(chan Dashboard, 1)
	go func() {
		d, _ := e.Dashboard(ctx, 10)
		dash <- d
	}()
	deadline := time.After(within)
	for range 2 {
		select {
		case gs := <-status:
			check("group status", gs)
			status = nil
		case d := <-dash:
			check("dashboard groups", d.Groups)
			dash = nil
		case <-deadline:
			var held []string
			if status != nil {
				held = append(held, "`volctl group status web`")
			}
			if dash != nil {
				held = append(held, "the dashboard's refresh")
			}
			return strings.Join(held, " and ")
		}
	}
	return ""
}
