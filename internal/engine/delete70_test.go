package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestDeleteRefusedButGoneForGoodNamesTheWayOut: a plugin that checks its precondition (snapshots of the ID, say) before it looks the volume
// up refuses every DeleteVolume FAILED_PRECONDITION, also once an earlier attempt whose answer
// was lost deleted the volume. refusedButGone keeps the volume deleting and said the delete
// again or reconcile finishes it; against this plugin neither ever does, and the same words
// came back each time, naming no way out. Every other stuck delete (still listed, capability
// lost, an unreadable answer) names `volctl volume deregister`; this one must too, at least
// once the delete again got the same refusal.
// Found by helper review70.
func TestDeleteRefusedButGoneForGoodNamesTheWayOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Code: codes.FailedPrecondition, Lost: true, Times: 1})
	h.faults.FailAlways(csi.RPCDeleteVolume, codes.FailedPrecondition)
	first := h.e.DeleteVolume(h.ctx, "v")
	if first == nil || !strings.Contains(first.Error(), "no longer lists") {
		t.Fatalf("first delete: %v; want the refusal of a volume the plugin no longer lists", first)
	}
	again := h.e.DeleteVolume(h.ctx, "v")
	rep, rerr := h.e.Reconcile(h.ctx)
	if v := h.volumeInfo("v"); v.State != string(store.VolumeDeleting) {
		t.Fatalf("v is %s; want still deleting (the plugin refuses every DeleteVolume)", v.State)
	}
	if rerr == nil {
		t.Fatalf("reconcile finished the delete: %+v", rep)
	}
	if again == nil || !strings.Contains(again.Error(), "volctl volume deregister v") {
		t.Errorf("the delete again, refused the same way (the advised retry cannot finish it): %v\nwant it to name `volctl volume deregister v`, the only way out", again)
	}
}

// TestDeleteAnswerUnreadDoesNotSayDeletedWhileStillListed: DeleteVolume answered OK with an
// answer over gRPC's limit (unread) by a plugin that still
// lists the volume (it deletes in the background, or did not delete): the error said "the
// plugin answered, so it deleted the storage" and sent the user to `volume deregister`,
// without the listing every other OK answer is checked by (docs: "A delete is finished when
// the plugin no longer has the volume"). The storage is still there; the words must not say
// it was deleted.
// Found by helper review70.
func TestDeleteAnswerUnreadDoesNotSayDeletedWhileStillListed(t *testing.T) {
	t.Parallel()
	h := newHarnessConfig(t, func(c *csitest.MemConfig) { c.DeleteLater = true }, Config{Timeouts: contentTimeouts})
	ext := h.create(volume("v")).ExternalID
	h.faults.Pad(csi.RPCDeleteVolume, 5<<20)
	err := h.e.DeleteVolume(h.ctx, "v")
	if _, held := h.mem.Volume(ext); !held {
		t.Fatalf("the plugin no longer holds %s: the test needs one that keeps it", ext)
	}
	if err == nil {
		t.Fatal("delete succeeded")
	}
	if strings.Contains(err.Error(), "deleted the storage") || !strings.Contains(err.Error(), "still lists") {
		t.Errorf("delete answered unreadably by a plugin that still lists %s: %v\nwant it to say the plugin still lists it, not that the storage was deleted", ext, err)
	}
}

// TestRegisterOfStorageBeingDeletedSaysSo: volume v's DeleteVolume was answered OK while the plugin still lists it (deleting in the
// background): v stays deleting. Registering the same storage as w was refused, naming v, with
// two ways out: "register the spec with id = v", which is refused (v is deleting), and
// "`volctl volume deregister v` first (it keeps the storage)", while the storage has been
// asked deleted and may be going: followed, w records storage the plugin is deleting. The
// refusal must say v is being deleted, and not advise a register of v that is refused.
// Found by helper review70.
func TestRegisterOfStorageBeingDeletedSaysSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.DeleteLater = true })
	ext := h.create(volume("v")).ExternalID
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		t.Fatal("delete of a volume the plugin still lists succeeded")
	}
	if v := h.volumeInfo("v"); v.State != string(store.VolumeDeleting) {
		t.Fatalf("v is %s, want deleting", v.State)
	}
	_, err := h.e.RegisterVolume(h.ctx, registered("w", ext))
	if err == nil {
		t.Fatal("register of v's storage as w succeeded")
	}
	if !strings.Contains(err.Error(), "deleting") && !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("register of storage v's delete was sent for: %v\nwant it to say v is being deleted", err)
	}
	if strings.Contains(err.Error(), `register the spec with id = "v"`) {
		if _, rerr := h.e.RegisterVolume(h.ctx, registered("v", ext)); rerr != nil {
			t.Errorf("the refusal advises registering the spec with id = \"v\"; that register: %v", rerr)
		}
	}
	if strings.Contains(err.Error(), "it keeps the storage") {
		t.Errorf("the refusal says deregistering v keeps the storage, whose DeleteVolume plugin %q answered OK: %v", "mem", err)
	}
}
