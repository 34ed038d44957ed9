package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestClaimAfterARebootStagesAgain: after a reboot (every mount gone) and before any
// reconcile, a second claim on a volume whose staging row says staged must check the mount
// table, as reconcile does, and stage the volume again before publishing onto it.
func TestClaimAfterARebootStagesAgain(t *testing.T) {
	t.Parallel()
	for _, locked := range []bool{true, false} {
		name := map[bool]string{true: "volume free", false: "volume locked by another operation"}[locked]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.claimThenReboot("v", "a", spec.MultiNodeMultiWriter)
			h.mem.ResetCalls()
			if !locked {
				// Admission without the volume lock: the claim waits for it, then is driven.
				h.claimWhileLocked(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"}, func(<-chan error) { waitForClaim(t, h, "v", "b") })
			} else {
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
			}
			if got, want := filterNode(h.rpcs()), []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}; !slices.Equal(got, want) {
				t.Fatalf("the claim after the reboot sent %v, want %v (staged again first)", got, want)
			}
			if st, _ := h.staging("v"); !st.Staged {
				t.Fatalf("staging after the claim = %+v, want staged", st)
			}
		})
	}
}

// waitForClaim waits until an alloc's claim on a volume is admitted.
func waitForClaim(t *testing.T, h *harness, vol, alloc string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, c := range h.liveClaims(vol) {
			if c.Alloc == alloc {
				return
			}
		}
	}
	t.Fatalf("claim of %q on %q never admitted", alloc, vol)
}

// TestHostpathClaimAfterARebootStagesAgain: the same with real mounts. The first claim's
// data is read through the second claim's target, which is mounted from a staging mounted
// again, not an empty directory.
func TestHostpathClaimAfterARebootStagesAgain(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	a := h.claimNew(t, "data", "a", spec.MultiNodeMultiWriter)
	staging := h.writeThenReboot(t, a, "data")
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "b"})
	if err != nil {
		t.Fatalf("claim after the reboot: %v", err)
	}
	if !hostpathtest.Mounted(t, staging) {
		t.Fatal("staging not mounted again by the claim")
	}
	requireKept(t, b.TargetPath, "the new claim's target")
	// Reconcile then restores the first claim onto the staging the claim made.
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != "restored" {
		t.Fatalf("reconcile after the claim = %+v, %v", rep, err)
	}
	for _, alloc := range []string{"a", "b"} {
		if _, err := h.e.Release(h.ctx, "data", alloc); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClaimKeepsAStagingThePluginStillHolds: a plugin that stages without mounting anything at
// the staging path looks, to the mount table, like one whose staging was lost. The claim stages
// again; when the plugin answers ALREADY_EXISTS (it holds the staging, with the first claim's
// capability), the claim publishes onto that staging, as it did before the check, rather than
// being rolled back.
func TestClaimKeepsAStagingThePluginStillHolds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	h.mounts.markGone(st.StagingPath)
	h.mem.ResetCalls()
	// Other mount options: another capability, which the plugin refuses to stage with.
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b", ReadOnly: true,
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}}})
	if got, want := filterNode(h.rpcs()), []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}; !slices.Equal(got, want) {
		t.Fatalf("the claim sent %v, want %v", got, want)
	}
	if st, _ := h.staging("v"); !st.Staged {
		t.Fatalf("staging after the claim = %+v, want staged", st)
	}
	if live := h.liveClaims("v"); len(live) != 2 || !live[0].AtRest() || !live[1].AtRest() {
		t.Fatalf("claims = %+v, want both at rest", live)
	}
}

// TestClaimAgainAfterARebootRestores: after a reboot and before any reconcile, the alloc that
// holds a published claim claims it again (its task restarting). Its target is not mounted any
// more: the claim must be restored (staged and published again) rather than handed back as a
// path that is now an empty directory on the host's disk.
func TestClaimAgainAfterARebootRestores(t *testing.T) {
	t.Parallel()
	for _, locked := range []bool{true, false} {
		name := map[bool]string{true: "volume free", false: "volume locked by another operation"}[locked]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.claimThenReboot("v", "a", spec.SingleNodeWriter)
			h.open(Config{}) // a new process after the reboot
			h.mem.ResetCalls()
			if !locked {
				ctx, waiting := whenWaitingForLock(h.ctx, "v")
				h.claimWhileLocked(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}, func(done <-chan error) {
					// The claim exists already: it must wait for the lock, then restore.
					select {
					case <-waiting:
					case err := <-done:
						t.Fatalf("claiming again while the volume is locked returned at once (%v), without restoring", err)
					}
				})
			} else {
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			}
			if got, want := filterNode(h.rpcs()), []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}; !slices.Equal(got, want) {
				t.Fatalf("claiming again after the reboot sent %v, want %v (restored first)", got, want)
			}
			if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() || live[0].Degraded {
				t.Fatalf("claims = %+v, want the one claim published again", live)
			}
		})
	}
}

// TestHostpathClaimAgainAfterARebootRestores: the same with real mounts. The alloc's data is
// read through its target again after it claims again, not an empty directory.
func TestHostpathClaimAgainAfterARebootRestores(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	a := h.claimNew(t, "data", "a", spec.SingleNodeWriter)
	staging := h.writeThenReboot(t, a, "data")
	again, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a"})
	if err != nil {
		t.Fatalf("claim again after the reboot: %v", err)
	}
	if !hostpathtest.Mounted(t, again.TargetPath) || !hostpathtest.Mounted(t, staging) {
		t.Fatal("target or staging not mounted again by the claim")
	}
	requireKept(t, again.TargetPath, "the target after claiming again")
	if _, err := h.e.Release(h.ctx, "data", "a"); err != nil {
		t.Fatal(err)
	}
}
