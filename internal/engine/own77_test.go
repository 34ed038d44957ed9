package engine

import (
	"os"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestRestoreUndoneOnceDoesNotTakeAMountMadeAtItsTargetSinceForTheVolume: the defect
// mountedSinceRestoreBegan closes for a degraded claim recording its publish accepted
// (store.TargetAccepted) stays open for one whose earlier restore was refused and undone. After
// a reboot the first restore's NodePublishVolume is answered OK with nothing mounted; the
// restore refuses it and sends NodeUnpublishVolume, which leaves the claim held, degraded, its
// record store.TargetUnsent ("nothing of the plugin's is there"). A tmpfs is then mounted at the
// target (by hand, or by a program) and written into. The next reconcile sends NodePublishVolume
// at it, the plugin (idempotent by "is it a mount point?") answers OK, and the tmpfs is recorded
// as the claim's mount: reported restored, the alloc writing into the tmpfs, not the volume.
// Correct: a target the record says holds nothing of the plugin's (TargetUnsent, as
// TargetAccepted) but is a mount point was mounted by someone else: the restore refuses as a
// conflict naming the umount, NodePublishVolume unsent, the claim held degraded. Real mounts,
// as root.
// Found by helper review77 (own).
func TestRestoreUndoneOnceDoesNotTakeAMountMadeAtItsTargetSinceForTheVolume(t *testing.T) {
	t.Parallel()
	// The first pass's NodePublishVolumes (the restore's, and the one more it sends after
	// taking the first back: TestRestoreOfALostTargetThroughAPluginThatRemembersItsPublishTakesOnePass)
	// answer OK and mount nothing (refused by the restore, and undone); after them, the plugin
	// is idempotent by "is it a mount point?".
	h, cl, _ := rebootedClaim(t, func(st store.Staging) func(string) error {
		publishes, after := 0, bindsTheStagingUnlessMounted(st)
		return func(target string) error {
			if publishes++; publishes <= 2 {
				return os.MkdirAll(target, 0o750)
			}
			return after(target)
		}
	})

	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("premise: reconcile whose NodePublishVolume mounted nothing restored the claim")
	}
	if now := h.liveClaims("v")[0]; !now.Degraded || now.State == store.ClaimPublished || now.Target != store.TargetUnsent {
		t.Fatalf("premise: after the refused and undone restore the claim is %s, degraded %v, target %v; want it held degraded, its target recorded unsent",
			now.State, now.Degraded, now.Target)
	}
	if mounted, _ := mountinfo.Mounted(cl.TargetPath); mounted {
		t.Fatalf("premise: the target %s is still a mount point after the undone restore", cl.TargetPath)
	}
	// Mounted at the target since, and written into.
	tmpfsWrittenAt(t, cl.TargetPath)
	sent := h.faults.Calls(csi.RPCNodePublishVolume)

	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 {
		t.Errorf("reconcile with a tmpfs mounted at the degraded claim's target since: %v, problems %+v, actions %+v; want the restore refused", err, rep.Problems, rep.Actions)
	} else if umount := "`umount " + cl.TargetPath + "`"; !strings.Contains(rep.Problems[0].Message, umount) {
		t.Errorf("reconcile's refusal does not say %s: %s", umount, rep.Problems[0].Message)
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != sent {
		t.Errorf("NodePublishVolume sent %d time(s) at a target something else is mounted at; want none", n-sent)
	}
	if now := h.liveClaims("v")[0]; !now.Degraded || now.State == store.ClaimPublished {
		t.Errorf("after reconcile the claim is %s, degraded %v: the tmpfs mounted by someone else at its target was taken for the volume", now.State, now.Degraded)
	}
}

// TestCreateAgainOfAVolumeMadeWithATopologyAfterThePluginLostAccessibilityConstraints: a
// volume created with a topology_request through a plugin that had the
// VOLUME_ACCESSIBILITY_CONSTRAINTS plugin capability; the plugin then restarts without it.
// `volctl volume create` of the same spec again (a script applying its specs, as Nomad's
// `volume create` is run again) sends nothing to the plugin for a volume made, and said
// "unchanged". checkCreateCapabilities now runs before createVolume looks at the record, so it
// is refused as invalid (exit 2) with "leave topology_request out of the spec", though no
// accessibility_requirements would be sent; and that advice followed is refused in turn, the
// topology_request being immutable ("deregister and register it again"). Correct: the
// capability is checked only where a CreateVolume carrying the topology is about to be sent
// for a new intent; a create of a volume made with this spec is unchanged, as before.
// Found by helper review77 (own).
func TestCreateAgainOfAVolumeMadeWithATopologyAfterThePluginLostAccessibilityConstraints(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Plugin.VolumeAccessibilityConstraints = true })
	sv := volume("db")
	sv.TopologyRequest = &spec.TopologyRequest{Preferred: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
	made := h.create(sv)
	h.restartWith(func(c *csitest.MemConfig) { c.Plugin.VolumeAccessibilityConstraints = false })

	info, outcome, err := h.e.CreateVolumeOutcome(h.ctx, sv)
	if err != nil {
		without := sv
		without.TopologyRequest = nil
		_, _, advised := h.e.CreateVolumeOutcome(h.ctx, without)
		t.Fatalf("create again of volume db, made with this very spec, once the plugin lost VOLUME_ACCESSIBILITY_CONSTRAINTS: %v; "+
			"want it unchanged, nothing sent (the advice followed, topology_request left out: %v)", err, advised)
	}
	if outcome != Unchanged || info.ExternalID != made.ExternalID || h.mem.CallCount(csi.RPCCreateVolume) != 0 {
		t.Errorf("create again: outcome %v, external ID %q (was %q), CreateVolume sent %d time(s); want unchanged, nothing sent",
			outcome, info.ExternalID, made.ExternalID, h.mem.CallCount(csi.RPCCreateVolume))
	}
}

// TestInterruptedCreateWithATopologyIsNotReplayedThroughAPluginThatLostAccessibilityConstraints:
// a create with a topology_request through a plugin with VOLUME_ACCESSIBILITY_CONSTRAINTS is
// cut short (CreateVolume unanswered: the volume left creating); the plugin restarts without the
// capability. Reconcile's replay sent the recorded request, accessibility_requirements and all,
// which the CSI spec forbids for such a plugin. It is refused, as a replay through a plugin that
// lost CREATE_DELETE_VOLUME is, naming the capability, the restart that lets reconcile finish it
// and the deregister that forgets it; nothing is sent. Found while mending what helper review77
// (own) found.
func TestInterruptedCreateWithATopologyIsNotReplayedThroughAPluginThatLostAccessibilityConstraints(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Plugin.VolumeAccessibilityConstraints = true })
	sv := volume("db")
	sv.TopologyRequest = &spec.TopologyRequest{Preferred: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
	h.faults.FailNext(csi.RPCCreateVolume, codes.Unavailable, fastRetry.Attempts)
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("premise: create succeeded through CreateVolume failing UNAVAILABLE")
	}
	h.restartWith(func(c *csitest.MemConfig) { c.Plugin.VolumeAccessibilityConstraints = false })
	sent := h.faults.Calls(csi.RPCCreateVolume)
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 {
		t.Fatalf("reconcile of the interrupted create through a plugin without VOLUME_ACCESSIBILITY_CONSTRAINTS: %v, problems %+v; want it refused", err, rep.Problems)
	}
	for _, want := range []string{"VOLUME_ACCESSIBILITY_CONSTRAINTS", "`volctl reconcile`", "`volctl volume deregister db`"} {
		if !strings.Contains(rep.Problems[0].Message, want) {
			t.Errorf("the refusal does not say %s: %s", want, rep.Problems[0].Message)
		}
	}
	if n := h.faults.Calls(csi.RPCCreateVolume); n != sent {
		t.Errorf("CreateVolume sent %d time(s) with accessibility_requirements to a plugin without VOLUME_ACCESSIBILITY_CONSTRAINTS", n-sent)
	}
}
