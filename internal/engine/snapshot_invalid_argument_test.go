package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// review31c found: reconcile's recorded snapshot delete refused INVALID_ARGUMENT for a reason that
// is not a secret (a snapshot ID the plugin no longer parses): the problem says the delete
// again with --secret "sends the delete again with the secrets the plugin needs", while the
// RPC's own hint (csi's rpcTable) counts only UNAUTHENTICATED and PERMISSION_DENIED as a
// refusal of the secrets. Run as advised, with the secret, it is refused the same.
func TestReconcileInvalidArgumentIsNotASecretsRefusal(t *testing.T) {
	h, _ := snapshotHarness(t, nil)
	if _, err := h.pluginClient().CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: h.volumeInfo("db").ExternalID, Name: "other"}); err != nil {
		t.Fatal(err)
	}
	h.faults.FailAlways(csi.RPCDeleteSnapshot, codes.Unavailable)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "other", spec.Secrets{"token": "t0ps3cret"}); err == nil {
		t.Fatal("want unanswered")
	}
	h.faults.Clear()
	h.faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Code: codes.InvalidArgument, Message: "snapshot_id: not a snapshot of this backend"})
	rep, _ := h.e.Reconcile(h.ctx)
	if len(rep.Problems) != 1 {
		t.Fatalf("problems: %+v", rep.Problems)
	}
	msg := rep.Problems[0].Message
	t.Logf("reconcile's problem: %s", msg)
	err := h.e.DeleteSnapshot(h.ctx, "mem", "other", spec.Secrets{"token": "t0ps3cret"})
	t.Logf("the advised delete with the secret: %v", err)
	if !strings.Contains(msg, "`volctl volume snapshot deregister mem other`") {
		t.Errorf("reconcile's problem names no way out: %s", msg)
	}
	if strings.Contains(msg, "--secret KEY=VALUE") && err != nil {
		t.Errorf("reconcile advises the delete again with --secret for an INVALID_ARGUMENT that is no secret's, and run so it fails the same:\n%s", msg)
	}
}
