package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A fingerprint an older volctl recorded (no boot with its sockets) is fingerprinted again by
// the first process that reads it, once: the new record carries this boot, and the process
// after reuses it with no RPC. Were the boot not written back, every process would fingerprint
// the plugin again for good.
func TestFingerprintWithNoBootRecordedIsTakenAgainOnceThenReused(t *testing.T) {
	t.Parallel()
	if bootID() == "" {
		t.Skip("no boot ID to read (/proc/sys/kernel/random/boot_id): none is recorded nor compared")
	}
	h := newHarness(t, nil)
	h.create(volume("v"))
	rewriteRecordedSockets(t, h, "", func(s map[string]any) {
		if s["boot"] != bootID() {
			t.Fatalf("socket recorded with boot %v; this boot is %q", s["boot"], bootID())
		}
		delete(s, "boot") // as a volctl before round 33 recorded it
	})

	h.open(Config{})
	infos := h.mem.CallCount(csi.RPCNodeGetInfo)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if h.mem.CallCount(csi.RPCNodeGetInfo) == infos {
		t.Error("a record with no boot was reused: nothing says it was taken in this boot")
	}
	for _, s := range h.storedPlugin("mem").Fingerprint.Sockets {
		if s.Boot != bootID() {
			t.Errorf("socket %s recorded again with boot %q; this boot is %q", s.Path, s.Boot, bootID())
		}
	}
	h.open(Config{}) // the process after
	infos = h.mem.CallCount(csi.RPCNodeGetInfo)
	h.release("v", "a")
	if n := h.mem.CallCount(csi.RPCNodeGetInfo) - infos; n != 0 {
		t.Errorf("the plugin was fingerprinted again (%d NodeGetInfo) for a release by the process after the one that recorded this boot", n)
	}
}
