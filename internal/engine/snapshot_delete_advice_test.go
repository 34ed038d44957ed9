package engine

import (
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A snapshot delete the user gave --secret, unanswered, then finished by reconcile, which keeps
// no secret a delete was given: the plugin refuses reconcile's delete for want of the secret.
// The problem's way out must be the delete again with the secret (its command, and --secret),
// not only deregister, which leaves the snapshot, nor "check the volume's secrets", which
// were never the ones the delete needed (round 30's leftover).
func TestReconcileAdvisesTheSnapshotDeleteWithItsSecrets(t *testing.T) {
	for _, code := range []codes.Code{codes.PermissionDenied, codes.Unauthenticated} {
		t.Run(code.String(), func(t *testing.T) {
			h, _ := snapshotHarness(t, nil)
			if _, err := h.pluginClient().CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: h.volumeInfo("db").ExternalID, Name: "other"}); err != nil {
				t.Fatal(err)
			}
			h.faults.FailAlways(csi.RPCDeleteSnapshot, codes.Unavailable)
			if err := h.e.DeleteSnapshot(h.ctx, "mem", "other", spec.Secrets{"token": "t0ps3cret"}); err == nil {
				t.Fatal("want unanswered")
			}
			h.faults.Clear()
			h.faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Code: code, When: func(req proto.Message) bool {
				return len(req.(*csipb.DeleteSnapshotRequest).GetSecrets()) == 0
			}})
			rep, _ := h.e.Reconcile(h.ctx)
			if len(rep.Problems) != 1 {
				t.Fatalf("reconcile's problems: %+v, want the refused delete", rep.Problems)
			}
			msg := rep.Problems[0].Message
			for _, want := range []string{"`volctl volume snapshot delete mem other --secret KEY=VALUE`", "--secret-file", "volctl volume snapshot deregister mem other"} {
				if !strings.Contains(msg, want) {
					t.Errorf("reconcile's problem does not say %q:\n%s", want, msg)
				}
			}
			if strings.Contains(msg, "volume's secrets") {
				t.Errorf("reconcile's problem blames the volume's secrets, which a delete of a snapshot volctl does not record never sent:\n%s", msg)
			}
			if strings.Contains(msg, "t0ps3cret") {
				t.Fatalf("the secret is in the problem: %s", msg)
			}
			// The advice works: the delete again with the secret finishes it.
			if err := h.e.DeleteSnapshot(h.ctx, "mem", "other", spec.Secrets{"token": "t0ps3cret"}); err != nil {
				t.Fatalf("the advised delete: %v", err)
			}
			if h.deletingRecorded("other") || len(h.mem.Snapshots()) != 0 {
				t.Fatalf("the advised delete left the snapshot (%d) or its recorded delete (%v)", len(h.mem.Snapshots()), h.deletingRecorded("other"))
			}
		})
	}
}
