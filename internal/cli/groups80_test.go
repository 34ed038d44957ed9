package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestGroupStatusDoesNotCallReadyAnAllocARunAgainRefusedForItsEditedSpec: group "api" ran with
// two volume blocks (data, logs); its spec is then edited and run again. The run records the
// edited spec as the group's (and its count), then refuses api[0], which keeps its claims as
// they are (exit 4, "group stop, then run, applies the new spec"): with the logs block removed
// (unnamedByTheSpec), or with data now read_only (heldConflict: the alloc holds a write claim).
// Right after, `group status api` reads "running", "Allocs Ready 1/1", api[0] with no error:
// engine.groupInfo shows a run's recorded error only on an alloc that holds nothing or lacks a
// volume, and groupCounts counts ready every alloc holding the stored spec's volumes at rest,
// whatever it holds beyond them or in another mode than the stored spec asks. So the user (or a
// script polling status, or the dashboard) is told the group is up as its spec says, while the
// alloc holds a writer's claim on a volume the spec no longer names, or writes a volume the
// spec now gives it read-only, the run's refusal nowhere. Correct: status compares the claims
// held with the group's stored spec (as the run did) and says the alloc does not hold its
// volumes as the spec asks (its error: the refusal, and `volctl group stop api`, then the run,
// as the way to apply it), not counting it ready.
// Found by helper review80 (groups).
func TestGroupStatusDoesNotCallReadyAnAllocARunAgainRefusedForItsEditedSpec(t *testing.T) {
	requireMount(t)
	for _, tc := range []struct {
		name string
		edit func(g *spec.Group)
		// what the run's refusal names
		refusal string
		// the stop and the edited spec's run, as advised, then give 1/1 (not for a mode the
		// volume has no capability for)
		followable bool
	}{
		{"logs block removed", func(g *spec.Group) { g.Volumes = g.Volumes[:1] }, `holds a claim on "logs", which the group's spec no longer names`, true},
		{"data now read_only", func(g *spec.Group) { g.Volumes[0].ReadOnly = true }, `already holds a write claim`, true},
		// Found by helper review80 (own80e): the other ways a run refuses a held claim.
		{"data's access mode changed", func(g *spec.Group) { g.Volumes[0].AccessMode = spec.MultiNodeSingleWriter }, `already holds a write claim`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCLIHarness(t)
			h.createVolume(t, "data", spec.MultiNodeMultiWriter)
			h.createVolume(t, "logs", spec.MultiNodeMultiWriter)
			g := apiGroup(t, "data", "logs")
			if _, err := h.e.RunGroup(h.ctx, g); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = h.e.StopGroup(context.Background(), "api") })
			tc.edit(&g)
			if _, err := h.e.RunGroup(h.ctx, g); err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Fatalf("group run of the edited spec = %v; want api[0] refused (%s) (the precondition)", err, tc.refusal)
			}
			code, out, errOut := h.runReported("group", "status", "api")
			if code != 0 {
				t.Fatalf("group status api: exit %d: %s", code, errOut)
			}
			if regexp.MustCompile(`(?m)^Allocs Ready += 1/1$`).MatchString(out) || !strings.Contains(out, "volctl group stop api") {
				t.Errorf("group status api right after a run that refused api[0] for the edited spec (%s) counts it ready, "+
					"saying nothing of the refusal nor of the stop that applies the spec:\n%s", tc.refusal, out)
			}
			// The advice followed: stopped, then the edited spec run; status then says ready.
			if !tc.followable {
				return
			}
			if _, err := h.e.StopGroup(h.ctx, "api"); err != nil {
				t.Fatalf("group stop api, as advised: %v", err)
			}
			if _, err := h.e.RunGroup(h.ctx, g); err != nil {
				t.Fatalf("group run of the edited spec after the stop: %v", err)
			}
			if _, out, _ := h.runReported("group", "status", "api"); !regexp.MustCompile(`(?m)^Allocs Ready += 1/1$`).MatchString(out) {
				t.Errorf("group status api once the edited spec ran after the stop:\n%s\nwant 1/1 ready", out)
			}
		})
	}
}

// TestGroupRunOverADegradedClaimAdvisesAReleaseThatRuns: group "api"'s alloc api[0] holds its
// claim on data; the claim's target loses its mount and reconcile's restore fails
// (NodePublishVolume refused), so the claim is held degraded. `group run` again claims data
// again for api[0], the restore fails again, and the run's error (the alloc's, printed by
// `group run` and recorded for `group status`) ends "`volctl volume release` frees it": bare,
// that command is a usage error (release takes VOLUME --alloc ALLOC), and for a group's claim
// the release that keeps `group status` true is the group's stop (freeCommand), as every other
// refusal of a group's claim advises: a `volume release` of api[0]'s claim leaves the group
// running without its volume. The fault is driveClaim's degraded branch (claims.go), which
// writes the advice bare instead of freeCommand(cl). Correct: the advice names the command that
// frees this claim as written: `volctl group stop api` (or, for a plain claim,
// `volctl volume release data --alloc ...`).
// Found by helper review80 (groups).
func TestGroupRunOverADegradedClaimAdvisesAReleaseThatRuns(t *testing.T) {
	requireMount(t)
	faults := csitest.NewFaults()
	h := newCLIHarnessServing(t, csitest.WithFaults(faults))
	h.createVolume(t, "data", spec.MultiNodeMultiWriter)
	g := apiGroup(t, "data")
	info, err := h.e.RunGroup(h.ctx, g)
	if err != nil || len(info.Allocs) != 1 || len(info.Allocs[0].Claims) != 1 {
		t.Fatalf("group run = %+v, %v", info, err)
	}
	t.Cleanup(func() {
		faults.Clear()
		_, _ = h.e.StopGroup(context.Background(), "api")
	})
	target := info.Allocs[0].Claims[0].TargetPath
	if err := unix.Unmount(target, 0); err != nil {
		t.Fatal(err)
	}
	faults.FailAlways(csi.RPCNodePublishVolume, codes.Internal)
	_, _ = h.e.Reconcile(h.ctx)
	claims, err := claimsOf(h, "data")
	if err != nil || len(claims) != 1 || !claims[0].Degraded {
		t.Fatalf("claims of data after a reconcile whose restore fails = %+v, %v; want api[0]'s held degraded (the precondition)", claims, err)
	}
	_, err = h.e.RunGroup(h.ctx, g)
	if err == nil || !strings.Contains(err.Error(), "degraded") {
		t.Fatalf("group run again over api[0]'s degraded claim, its restore failing = %v; want the restore's failure (the precondition)", err)
	}
	if strings.Contains(err.Error(), "`volctl volume release` frees it") || !strings.Contains(err.Error(), "volctl group stop api") {
		t.Errorf("group run's error over api[0]'s degraded claim advises a bare `volctl volume release` (a usage error, and not what frees a group's claim), "+
			"not `volctl group stop api`:\n%v", err)
	}
}
