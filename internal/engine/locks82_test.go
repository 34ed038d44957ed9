package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// TestLockFileDeletedWhileRegisterValidatesRecordsNothing: `volume register` of a volume
// already registered holds the volume's lock across ValidateVolumeCapabilities and then
// records, but its record is not checked against the lock it took (no stillHeld, no
// locks.holding), as every other operation's is. The volume's lock file removed by hand while
// it validates lets a `volume delete` in another volctl take a new file at the path and delete
// the storage and the record; the register then finds no record, inserts the volume anew as
// ready and says "registered": the user is told of a volume whose storage is gone, and every
// claim of it fails NotFound. Correct: the register's record runs under locks.holding (or checks
// stillHeld before it), stopping with errLockLost, naming the lock file, recording nothing.
// Found by helper review82 (locks).
func TestLockFileDeletedWhileRegisterValidatesRecordsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 2 * mib})
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 2*mib)); err != nil {
		t.Fatalf("register: %v", err)
	}
	var lockPath string
	var derr error
	ran := false
	h.e.failpointHook = func(name string) {
		if name != "register:validated" || ran {
			return
		}
		ran = true
		var other *Engine
		other, lockPath = h.removeLockThenOpenAnother("db")
		derr = other.DeleteVolume(h.ctx, "db")
	}
	_, err := h.e.RegisterVolume(h.ctx, regSpec("db", 2*mib))
	h.e.failpointHook = nil
	if !ran {
		t.Fatal("the register passed no register:validated failpoint")
	}
	if derr != nil {
		t.Fatalf("premise: the delete in the other volctl, on the lock file at the path: %v", derr)
	}
	if n := h.pluginVolumeCount(); n != 0 {
		t.Fatalf("premise: the plugin holds %d volumes after the delete; want none", n)
	}
	wantLockLost(t, "the register", err, lockPath, "db")
	if v, verr := h.e.Volume(h.ctx, "db"); verr == nil {
		t.Errorf("volume db is recorded (%s, external ID %q) after the other volctl deleted its storage: the register, whose lock file was removed under it, recorded it anew", v.State, v.ExternalID)
	}
}
