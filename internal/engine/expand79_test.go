package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestDeregisterOfAVolumeWithAPendingExpansionIsRefusedAndFinishesAsAdvised: `volctl volume
// deregister V` of a volume whose expansion is pending (a ControllerExpandVolume sent, volctl
// killed before its answer was recorded: the plugin grew the storage to 4MiB) forgot the
// pending expansion without a word: no refusal, no warning, an event saying only
// "deregistered". Registered again by its external ID, the record was at the spec's old size
// with nothing owed, and no claim ever grew its file system. An owed NodeExpandVolume is
// refused for that reason (TestDeregisterOfAVolumeOwedANodeExpansionSaysItIsForgotten), and a
// handover refuses a pending expansion. Now the plain deregister refuses it, naming `volctl
// reconcile`, which finishes it; followed (and the node step it then owes paid as that
// refusal says), the deregister goes; with --force it is forgotten with a warning saying so.
// Found by helper review79 (expand).
func TestDeregisterOfAVolumeWithAPendingExpansionIsRefusedAndFinishesAsAdvised(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID
	killedAt(h, "rpc:ControllerExpandVolume", func() { h.e.ExpandVolume(h.ctx, "v", 4*mib, 0) })
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Fatalf("after the kill: expansion pending %d, want 4MiB (precondition)", v.ExpansionPending)
	}
	if mv, _ := h.mem.Volume(ext); mv.CapacityBytes != 4*mib {
		t.Fatalf("storage %d after the kill, want grown to 4MiB (precondition)", mv.CapacityBytes)
	}

	_, err := h.e.DeregisterVolume(h.ctx, "v", false)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("deregister of a volume with an expansion to 4MiB pending: %v; want a conflict naming it", err)
	}
	for _, want := range []string{"expansion to 4MiB pending", "`volctl reconcile`", "`volctl volume deregister v --force --yes`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Fatalf("after the refusal: expansion pending %d, want kept at 4MiB", v.ExpansionPending)
	}

	// Followed: reconcile finishes the expansion.
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile, as advised: %v (%+v)", err, rep)
	}
	v := h.volumeInfo("v")
	if v.ExpansionPending != 0 || v.CapacityBytes != 4*mib {
		t.Fatalf("after reconcile: pending %d, recorded %d; want the expansion finished at 4MiB", v.ExpansionPending, v.CapacityBytes)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
		if v.NodeExpansionOwed == 0 || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "claim it once") {
			t.Fatalf("deregister after reconcile finished the expansion (node step owed %d): %v", v.NodeExpansionOwed, err)
		}
		// The node step the finished expansion owes, paid as its refusal says.
		nodeExpands := h.mem.CallCount(csi.RPCNodeExpandVolume)
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
		if h.mem.CallCount(csi.RPCNodeExpandVolume) == nodeExpands {
			t.Errorf("the claim advised to finish the expansion sent no NodeExpandVolume")
		}
		if _, err := h.e.Release(h.ctx, "v", "web-0"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
			t.Fatalf("deregister once the expansion and its node step are done: %v", err)
		}
	}

	// --force forgets a pending one, saying so.
	h2 := newHarness(t, nil)
	h2.create(volume("w"))
	killedAt(h2, "rpc:ControllerExpandVolume", func() { h2.e.ExpandVolume(h2.ctx, "w", 4*mib, 0) })
	warnings, err := h2.e.DeregisterVolume(h2.ctx, "w", true)
	if err != nil {
		t.Fatalf("deregister --force of a volume with an expansion pending: %v", err)
	}
	if said := strings.Join(warnings, "\n"); !strings.Contains(said, "expansion to 4MiB was pending") || !strings.Contains(said, "forgets") {
		t.Errorf("deregister --force warnings %q; want them to say the pending expansion is forgotten", warnings)
	}
}

// TestRegistrationWhoseExpansionWentAboveTheLimitSaysTheRestIsNotRecorded: `volctl volume
// register` again of a volume with a larger capacity_min and a capacity_max, and a new mount
// flag, through a plugin that allocates in large units: its ControllerExpandVolume answers
// 8MiB for the 4MiB asked, above the 4MiB limit. The storage grew (an expansion cannot be
// undone) and the expansion's record is committed at 8MiB, but the rest of the registration
// (the mount flag) is not, and the error, which ended "(it is recorded at 8MiB; check the
// plugin's allocation unit ...)", said nothing of it: the next claim mounted without the flag.
// Now the error says the registration is not recorded and what records it (a capacity_max of
// at least 8MiB); followed, the registration is recorded with its mount flag.
// Found by helper review79 (expand).
func TestRegistrationWhoseExpansionWentAboveTheLimitSaysTheRestIsNotRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 2 * mib})
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 2*mib)); err != nil {
		t.Fatalf("register: %v", err)
	}
	again := regSpec("db", 4*mib)
	again.CapacityMax = 4 * mib
	again.MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}}
	h.mem.AnswerExpandWith(8 * mib) // a plugin allocating in 8MiB units
	_, regErr := h.e.RegisterVolume(h.ctx, again)
	if regErr == nil {
		t.Fatalf("a registration whose expansion was answered above its capacity_max succeeded")
	}
	v := h.volumeInfo("db")
	if v.CapacityBytes != 8*mib {
		t.Fatalf("premise: the expansion answered 8MiB recorded; recorded %d (registration: %v)", v.CapacityBytes, regErr)
	}
	if v.MountOptions != nil && slices.Contains(v.MountOptions.MountFlags, "noatime") {
		t.Fatalf("premise: the registration's mount flag was recorded: %+v", v.MountOptions)
	}
	for _, want := range []string{"the registration is not recorded", "set the spec's capacity_max to at least 8MiB"} {
		if !strings.Contains(regErr.Error(), want) {
			t.Errorf("registration error %q does not say %q", regErr, want)
		}
	}
	// Followed.
	again.CapacityMax = 8 * mib
	if _, err := h.e.RegisterVolume(h.ctx, again); err != nil {
		t.Fatalf("register again with capacity_max 8MiB, as advised: %v", err)
	}
	v = h.volumeInfo("db")
	if v.MountOptions == nil || !slices.Contains(v.MountOptions.MountFlags, "noatime") || v.CapacityBytes != 8*mib {
		t.Errorf("after the registration as advised: mount options %+v, recorded %d; want noatime recorded at 8MiB", v.MountOptions, v.CapacityBytes)
	}
}
