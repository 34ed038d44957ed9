package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestVolumeStatusSaysAPublishedTargetCoveredByAnotherMount: volume v's claim by alloc a1 is
// published, and a tmpfs has been mounted over its target since (by hand or by a program): the
// alloc now reads and writes the tmpfs, not the volume. `volctl reconcile` reports it as a
// problem naming the target and its umount (targetCovered), and group status says it too; but
// `volctl volume status v` (and `volctl status v`, and the summary `volctl status`) show the
// claim as "published", at rest, no error, and nothing about the target: the view a person
// reads says all is well while what the alloc writes is lost with the tmpfs. Correct: the
// volume's detail (and its --json, and the summary's count of claims not at rest or a note)
// says the claim's target is covered, naming the target and the umount, as reconcile does.
// Found by helper review76.
func TestVolumeStatusSaysAPublishedTargetCoveredByAnotherMount(t *testing.T) {
	ctx := context.Background()
	e, cl := publishedWithData(t)
	if err := unix.Mount("tmpfs", cl.TargetPath, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	// The precondition: reconcile says the target is covered.
	code, rout, rerr := runOnOut(ctx, e, "reconcile")
	if !strings.Contains(rout+rerr, cl.TargetPath) || !strings.Contains(rout+rerr, "umount") {
		t.Fatalf("reconcile with the target covered: exit %d\n%s%s\nwant it to name the covered target %s and its umount (the precondition)", code, rout, rerr, cl.TargetPath)
	}

	code, out, errOut := runOnOut(ctx, e, "volume", "status", "v")
	if code != ExitOK {
		t.Fatalf("volume status v: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, cl.TargetPath) || !strings.Contains(out, "umount") {
		t.Errorf("volume status v, with a tmpfs mounted over claim a1's target %s since its publish (reconcile: %q):\n%s\n"+
			"want the covered target named, with its umount, not the claim shown published and at rest", cl.TargetPath, firstLine(rerr+rout), out)
	}
	code, out, errOut = runOnOut(ctx, e, "volume", "status", "v", "--json")
	if code != ExitOK {
		t.Fatalf("volume status v --json: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "umount") {
		t.Errorf("volume status v --json says nothing of the covered target %s:\n%s", cl.TargetPath, out)
	}
	// Its advice followed: the cover unmounted, the claim reads published, nothing covered.
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runOnOut(ctx, e, "volume", "status", "v", "--json"); code != ExitOK || strings.Contains(out, "covered") {
		t.Errorf("volume status v --json with the cover unmounted: exit %d %s\n%s\nwant the claim no longer said covered", code, errOut, out)
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(strings.TrimSpace(s), "\n"); return l }

// TestStatusSummaryListsANodeExpansionOwedOnAPublishedVolume: volume v, published for alloc a1,
// is expanded to 2GiB; ControllerExpandVolume succeeds and NodeExpandVolume fails, so the file
// system is not grown and the node step is owed (NodeExpansionOwed), which `volctl reconcile`
// sends (expandOnNode: "volume "v" expanded on the node ..."). `volctl status` — the one
// summary whose Owed section is "the work volctl owes that no claim drives ... which volctl
// reconcile does" — lists nothing owed, claims "0 not at rest", and its --json "owed" is
// empty (engine.Owed leaves every node expansion out), so the summary reads as settled while
// the file system is still the old size and reconcile has work to do. Correct: the summary
// (text and --json alike) names volume v's owed node expansion, as volume status v and
// reconcile do. Found by helper review76.
func TestStatusSummaryListsANodeExpansionOwedOnAPublishedVolume(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	faults := csitest.NewFaults()
	_, e, _ := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()), csitest.WithFaults(faults))
	createSingleWriter(t, e, "v")
	claimUntilCleanup(t, e, "v", "a1")
	faults.FailAlways(csi.RPCNodeExpandVolume, codes.Internal)
	if code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "2GiB"); code != ExitError {
		t.Fatalf("expand with NodeExpandVolume failing: exit %d, want %d: %s", code, ExitError, errOut)
	}
	faults.Clear()
	if v, err := e.Volume(ctx, "v"); err != nil || v.NodeExpansionOwed != 2<<30 {
		t.Fatalf("after the failed node step: owed %d (%v); want 2GiB owed (the precondition)", v.NodeExpansionOwed, err)
	}

	code, text, errOut := runOnOut(ctx, e, "status")
	if code != ExitOK {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	code, js, errOut := runOnOut(ctx, e, "status", "--json")
	if code != ExitOK {
		t.Fatalf("status --json: exit %d: %s", code, errOut)
	}
	var sum struct {
		Owed []engine.OwedWork `json:"owed"`
	}
	if err := json.Unmarshal([]byte(js), &sum); err != nil {
		t.Fatalf("status --json: %v\n%s", err, js)
	}
	owedInJSON := false
	for _, w := range sum.Owed {
		owedInJSON = owedInJSON || w.VolumeID == "v"
	}
	owedInText := strings.Contains(text, "Owed:") && strings.Contains(text, "expan")

	// What reconcile does with it: it sends the NodeExpandVolume the summary did not list.
	_, rout, rerr := runOnOut(ctx, e, "reconcile")
	if v, err := e.Volume(ctx, "v"); err != nil || v.NodeExpansionOwed != 0 {
		t.Fatalf("reconcile did not pay the owed node step (owed %d, %v):\n%s%s", v.NodeExpansionOwed, err, rout, rerr)
	}
	if !owedInText || !owedInJSON {
		t.Errorf("status with volume v's NodeExpandVolume to 2GiB owed (the file system not grown), which reconcile then sent (%q):\n%s\n--json owed: %+v\n"+
			"want the owed node expansion listed, in the text and in --json", firstLine(rout), text, sum.Owed)
	}
}

// TestGroupStatusDoesNotCountReadyAnAllocWhoseTargetIsCovered: group api's one alloc, api[0],
// holds its claim of volume d, published; a tmpfs has been mounted over the claim's target since.
// The engine's group status says so in the alloc's error (markUnbound: the target and its
// umount), but `volctl group status` counts the alloc ready all the same: the list reads
// "ALLOCS READY 1/1" and the detail "Allocs Ready = 1/1" above a row that says the alloc sees
// the tmpfs, not the volume (groupCounts looks at claims at rest and unbound volume_mounts
// only). A script or a person reading the count starts the task on the tmpfs, and what it
// writes is not on the volume. Correct: an alloc whose claim's target is covered is not
// counted ready (0/1), as one whose volume_mount is unbound is not. Found by helper review76.
func TestGroupStatusDoesNotCountReadyAnAllocWhoseTargetIsCovered(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	_, e, _ := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()))
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "d", Name: "d", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	info, err := e.RunGroup(ctx, apiGroup(t, "d"))
	if err != nil || len(info.Allocs) != 1 || len(info.Allocs[0].Claims) != 1 {
		t.Fatalf("group run = %+v, %v; want api[0] holding its claim", info, err)
	}
	t.Cleanup(func() { _, _ = e.StopGroup(context.Background(), "api") })
	target := info.Allocs[0].Claims[0].TargetPath
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })

	code, detail, errOut := runOnOut(ctx, e, "group", "status", "api")
	if code != ExitOK {
		t.Fatalf("group status api: exit %d: %s", code, errOut)
	}
	if !strings.Contains(detail, target) || !strings.Contains(detail, "umount") {
		t.Fatalf("group status api does not name the covered target %s (the precondition):\n%s", target, detail)
	}
	code, list, errOut := runOnOut(ctx, e, "group", "status")
	if code != ExitOK {
		t.Fatalf("group status: exit %d: %s", code, errOut)
	}
	if strings.Contains(detail, "1/1") || strings.Contains(list, "1/1") {
		t.Errorf("group status counts alloc api[0] ready though its target %s shows a tmpfs, not the volume:\n%s\n%s\nwant Allocs Ready 0/1", target, list, detail)
	}
}
