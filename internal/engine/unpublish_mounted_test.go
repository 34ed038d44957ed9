package engine

import (
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/spec"
)

// A second orchestrator on volctl's own plugin's root (Nomad, through the plugin job `volctl
// export nomad` writes) sends ControllerUnpublishVolume for this node while volctl's claim has
// the volume staged and published: its alloc was refused the staging the claim holds, and
// Nomad ends that alloc's claim so (a handover an older volctl made with local claims live, or
// the volume registered with `nomad volume register` by hand). The plugin answered OK and
// dropped the attachment under the claim, which volctl still recorded: volctl and the plugin
// disagreed about it. After a reboot, the plugin refused the restore's NodeStageVolume ("not
// controller-published"), and volctl attached the volume again (reattach), a
// ControllerPublishVolume that --max-volumes, which had counted the volume out meanwhile, may
// refuse, the claim then degraded. The plugin refuses the unpublish now, and the restore sends
// no ControllerPublishVolume; volctl's own ways back, a release and a forced detach (which
// unmounts volctl's paths itself before it sends the unpublish), still detach the volume.
func TestHostpathClaimKeepsItsAttachmentWhenAnotherOrchestratorUnpublishes(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	a := h.claimNew(t, "db", "a", spec.SingleNodeWriter)
	v, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	other, err := hostpath.New(hostpath.Config{Root: h.root, NodeID: "n1", EnableAttach: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.ControllerUnpublishVolume(h.ctx, &csipb.ControllerUnpublishVolumeRequest{VolumeId: v.ExternalID, NodeId: "n1"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "staged at") {
		t.Errorf("ControllerUnpublishVolume from the other process while volctl's claim has the volume staged = %v, want FAILED_PRECONDITION naming the staging", err)
	}
	h.writeThenReboot(t, a, "db")
	attaches := h.faults.Calls(csi.RPCControllerPublishVolume)
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != "restored" {
		t.Fatalf("reconcile after the reboot = %+v, %v; want the claim restored", rep, err)
	}
	if n := h.faults.Calls(csi.RPCControllerPublishVolume) - attaches; n != 0 {
		t.Errorf("the restore sent ControllerPublishVolume %d time(s): the plugin had dropped the attachment volctl records", n)
	}
	requireKept(t, a.TargetPath, "the restored claim's target")
	if _, err := h.e.Release(h.ctx, "db", "a"); err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.AttachedTo != "" {
		t.Fatalf("volume after its claim's release: attached to %q, %v; want detached", v.AttachedTo, err)
	}

	// A forced detach unmounts volctl's own paths, then sends the unpublish: taken.
	h.claimNew(t, "x", "c", spec.SingleNodeWriter)
	res, err := h.e.Detach(h.ctx, "x", true)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "x"); err != nil || v.AttachedTo != "" || v.UnpublishOwed() {
		t.Fatalf("volume after a forced detach: attached to %q, %v (warnings %q); want detached", v.AttachedTo, err, res.Warnings)
	}
}
