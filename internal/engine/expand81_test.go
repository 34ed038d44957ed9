package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestRegistrationWhoseExpansionAnswerIsLostFinishesAsAdvised: a volume registered again with a
// larger capacity_min, an added capability and a mount flag; its ControllerExpandVolume answer
// is lost at every attempt (the plugin grew the storage, volctl read UNAVAILABLE). The
// registration fails with the expansion pending, and its error advises only `volctl volume
// expand db --size 4MiB` or `volctl reconcile`. Followed, either finishes the expansion and
// succeeds ("volume "db" expanded to 4MiB"), while the registration's other changes (the
// capability, the mount flag) are never recorded and nothing says so: the user did as told and
// the spec they registered is not the one volctl holds. This is the lost-answer twin of
// TestRegistrationWhoseNodeStepFailsFinishesAsAdvised (nodeStepFailed) and of the
// grownPastLimit case, which say the registration is (or is not) recorded and what records it.
// Correct: the error says the registration is not recorded and advises registering the spec
// again once the expansion is finished (or records the registration beside the pending
// expansion), so that following the advice leaves the spec's changes recorded.
// Found by helper review81 (expand).
func TestRegistrationWhoseExpansionAnswerIsLostFinishesAsAdvised(t *testing.T) {
	t.Parallel()
	// A plugin that cannot say a volume's size: the lost attempts are sent again, not answered
	// from a listing, so the expansion is left pending.
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, false })
	sv := volume("db")
	v := h.create(sv)
	if v.CapacityBytes <= 0 || v.CapacityBytes >= 4*mib {
		t.Fatalf("premise: volume db is created below 4MiB at a known size (%d bytes)", v.CapacityBytes)
	}
	again := sv
	again.ExternalID = v.ExternalID
	again.CapacityMin = 4 * mib
	again.Capabilities = append(slices.Clone(sv.Capabilities), capab(spec.MultiNodeReaderOnly))
	again.MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}}

	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	_, regErr := h.e.RegisterVolume(h.ctx, again)
	h.faults.Clear(csi.RPCControllerExpandVolume)
	if regErr == nil {
		t.Fatal("premise: the registration whose expansion answer was lost at every attempt succeeded")
	}
	if got := h.volumeInfo("db"); got.ExpansionPending != 4*mib {
		t.Fatalf("premise: the expansion to 4MiB is left pending (pending %d); the registration said: %v", got.ExpansionPending, regErr)
	}

	// Follow every command the registration's error advises.
	msg := regErr.Error()
	if !strings.Contains(msg, "the registration is not recorded") || !strings.Contains(msg, "register the spec again") {
		t.Errorf("the registration's error: %v\nwant it to say the registration is not recorded and to register the spec again once the expansion is finished", regErr)
	}
	followed := followRegistrationAdvice(t, h, regErr, again)
	got := h.volumeInfo("db")
	if got.ExpansionPending != 0 || got.CapacityBytes < 4*mib {
		t.Errorf("after the advice (%s): recorded at %d bytes, expansion pending %d; want 4MiB, none pending",
			strings.Join(followed, ", then "), got.CapacityBytes, got.ExpansionPending)
	}
	hasCap := slices.Contains(got.Capabilities, capab(spec.MultiNodeReaderOnly))
	hasFlag := got.MountOptions != nil && slices.Contains(got.MountOptions.MountFlags, "noatime")
	if !hasCap || !hasFlag {
		t.Errorf("after following the registration's advice (%s), the expansion is done but the registration's other changes are not recorded "+
			"(capability multi-node-reader-only recorded: %v; mount flag noatime recorded: %v), and nothing said so; the registration said: %v",
			strings.Join(followed, ", then "), hasCap, hasFlag, regErr)
	}
}

// followRegistrationAdvice runs each command regErr, a registration's error, advises (a
// reconcile, the expand of db to 4MiB, the registration of again once more) and returns what it
// ran; it fails the test when the error advises none.
func followRegistrationAdvice(t *testing.T, h *harness, regErr error, again spec.Volume) []string {
	t.Helper()
	msg := regErr.Error()
	var followed []string
	if strings.Contains(msg, "volctl reconcile") {
		followed = append(followed, "volctl reconcile")
		if rep, err := h.e.Reconcile(context.WithoutCancel(h.ctx)); err != nil || !rep.OK() {
			t.Logf("the advised reconcile: %v %+v", err, rep.Problems)
		}
	}
	if strings.Contains(msg, "volctl volume expand db --size 4MiB") {
		followed = append(followed, "volctl volume expand db --size 4MiB")
		if _, err := h.e.ExpandVolume(h.ctx, "db", 4*mib, 0); err != nil {
			t.Logf("the advised expand: %v", err)
		}
	}
	if strings.Contains(msg, "volctl volume register") || strings.Contains(msg, "register again") || strings.Contains(msg, "register the spec again") ||
		strings.Contains(msg, "register it again") {
		followed = append(followed, "volctl volume register")
		if _, err := h.e.RegisterVolume(h.ctx, again); err != nil {
			t.Logf("the advised registration again: %v", err)
		}
	}
	if len(followed) == 0 {
		t.Fatalf("the registration's error advises nothing: %v", regErr)
	}
	return followed
}
