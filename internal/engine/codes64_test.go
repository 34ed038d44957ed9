package engine

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A `volume register` whose ValidateVolumeCapabilities runs into volctl's long timeout records
// nothing (the registration is all or nothing), so nothing is left for reconcile to finish. The
// error advised "it may still be working: run `volctl reconcile` later": a reconcile, run as
// advised, did not register the volume, and the user was left believing it would be. Found by
// helper review64.
func TestRegisterValidateTimeoutDoesNotAdviseReconcile(t *testing.T) {
	t.Parallel()
	h := newHarnessConfig(t, nil, Config{Timeouts: csi.Timeouts{Short: 5 * time.Second, Long: 300 * time.Millisecond}})
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	h.faults.Hang(csi.RPCValidateVolumeCapabilities)
	_, err := h.e.RegisterVolume(h.ctx, registered("v", "ext-1"))
	if err == nil || !csi.IsTimeout(err) {
		t.Fatalf("register against a plugin hung in ValidateVolumeCapabilities: %v; want volctl's timeout", err)
	}
	h.faults.Clear()
	if _, rerr := h.e.Reconcile(h.ctx); rerr != nil {
		t.Fatalf("reconcile, as advised: %v", rerr)
	}
	_, verr := h.e.Volume(h.ctx, "v")
	if strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("the timed-out registration advises `volctl reconcile`, which has nothing to finish (after it, volume \"v\": %v): %v", verr, err)
	}
	// The plugin's own DEADLINE_EXCEEDED (its backend timed out), answered in time: the same.
	h.faults.FailAlways(csi.RPCValidateVolumeCapabilities, codes.DeadlineExceeded)
	_, err = h.e.RegisterVolume(h.ctx, registered("v", "ext-1"))
	if err == nil {
		t.Fatal("register against a plugin answering ValidateVolumeCapabilities DEADLINE_EXCEEDED succeeded")
	}
	if strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("the registration refused DEADLINE_EXCEEDED by the plugin advises `volctl reconcile`, which has nothing to finish: %v", err)
	}
}

// `volume delete` of a volume whose create was interrupted (every CreateVolume answer lost: the
// plugin made the volume) sends CreateVolume again under its name to learn the ID, and forgets
// the record when the plugin "refuses the create for good", on the ground that a plugin answers
// OK for a volume it holds. A refusal of the credentials (UNAUTHENTICATED, PERMISSION_DENIED:
// the secrets rotated on the backend, say) is no answer about the name: the plugin never looked.
// Before, the record was forgotten and the delete succeeded, while the plugin still held the
// volume the lost answer was about, tracked by nothing. It fails, the create kept recorded.
// Found by helper review64.
func TestDeleteOfAnInterruptedCreateRefusedCredentialsKeepsTheRecord(t *testing.T) {
	t.Parallel()
	for _, code := range []codes.Code{codes.Unauthenticated, codes.PermissionDenied} {
		t.Run(code.String(), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
			if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
				t.Fatal("create with every answer lost succeeded")
			}
			if n := h.pluginVolumeCount(); n != 1 {
				t.Fatalf("the plugin holds %d volumes after the lost creates, want 1", n)
			}
			h.faults.Clear()
			h.faults.FailAlways(csi.RPCCreateVolume, code)
			err := h.e.DeleteVolume(h.ctx, "v")
			_, verr := h.e.Volume(h.ctx, "v")
			if n := h.pluginVolumeCount(); n != 0 && (err == nil || verr != nil) {
				t.Errorf("delete of the interrupted create, CreateVolume refused %s: err %v; volume v after it: %v; "+
					"the plugin still holds %d volume(s) made under its name, tracked by nothing", code, err, verr, n)
			}
			if verr == nil && h.volumeInfo("v").State != string(store.VolumeCreating) {
				t.Errorf("volume v after the refused delete is %s, want it recorded creating", h.volumeInfo("v").State)
			}
		})
	}
}

// The same for a snapshot: `snapshot delete NAME` of a snapshot whose CreateSnapshot answers
// were lost (the plugin took it) sends CreateSnapshot again to learn its ID. A plugin refusing
// the volume's credentials refuses that, and the listing that would find the snapshot, alike.
// Before, the intent was forgotten under a success, the snapshot left on the storage, tracked by
// nothing: a refusal of the credentials says nothing of what the plugin holds under the name.
// Found by helper review64.
func TestSnapshotDeleteOfAPendingCreateRefusedCredentialsKeepsTheIntent(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "two", nil); err == nil {
		t.Fatal("snapshot with every answer lost succeeded")
	}
	if n := len(h.mem.Snapshots()); n != 1 {
		t.Fatalf("the plugin holds %d snapshots after the lost creates, want 1", n)
	}
	h.faults.Clear()
	for _, rpc := range []string{csi.RPCCreateSnapshot, csi.RPCListSnapshots, csi.RPCGetSnapshot} {
		h.faults.FailAlways(rpc, codes.Unauthenticated)
	}
	err := h.e.DeleteSnapshot(h.ctx, "mem", "two", nil)
	var pending bool
	h.update(func(tx *store.Tx) error {
		_, gerr := tx.Snapshots().GetCreate("mem", "two")
		pending = gerr == nil
		return nil
	})
	if n := len(h.mem.Snapshots()); n != 0 && (err == nil || !pending) {
		t.Errorf("snapshot delete two, its CreateSnapshot refused Unauthenticated: err %v; intent still recorded: %v; "+
			"the plugin still holds %d snapshot(s) taken under the name, tracked by nothing", err, pending, n)
	}
}
