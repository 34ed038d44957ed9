package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestRegisterValidateTimeoutSaysHowToRaiseTheTimeout: a `volume register` whose
// ValidateVolumeCapabilities runs into the plugin's long timeout loses the advice every other
// long RPC cut off by it carries (longTimeoutAdvice: "if it needs longer, raise its timeout
// (...): `volctl plugin register ... --timeout ...`", TestTimedOutRPCSaysHowToRaiseTheTimeout):
// registerRound replaces the error's whole hint with "run the register again". A plugin that is
// slow rather than hung (a cloud backend that takes longer than the timeout to look the volume
// up) fails the register so on every try, and the only advice given, run it again, can never
// work. The hint keeps saying that nothing was recorded, and also says how to raise the
// plugin's timeout, as a timed-out claim, create or expand does. Found by helper review78
// (timeouts).
func TestRegisterValidateTimeoutSaysHowToRaiseTheTimeout(t *testing.T) {
	t.Parallel()
	h := newHarnessConfig(t, nil, Config{Timeouts: csi.Timeouts{Short: 5 * time.Second, Long: 300 * time.Millisecond}})
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	// Slow, not hung: it answers after 600ms, past the 300ms timeout, within the 1s advised.
	h.faults.Delay(csi.RPCValidateVolumeCapabilities, 600*time.Millisecond)
	_, err := h.e.RegisterVolume(h.ctx, registered("v", "ext-1"))
	if err == nil || !csi.IsTimeout(err) {
		t.Fatalf("register against a plugin hung in ValidateVolumeCapabilities: %v; want volctl's own timeout", err)
	}
	if !strings.Contains(err.Error(), "register again") {
		t.Fatalf("precondition: the timed-out registration's error is not register's own hint: %v", err)
	}
	var missing []string
	for _, want := range []string{"raise its timeout", "volctl plugin register --id mem", "--timeout 1s"} {
		if !strings.Contains(err.Error(), want) {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the registration cut off by plugin \"mem\"'s 300ms timeout says only to run it again, which a plugin slower than that fails every time; "+
			"it does not say how to raise the timeout (missing %q): %v", missing, err)
	}
	// The advice followed: the plugin registered again with a 1s timeout, the register goes.
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket, Timeout: time.Second}); err != nil {
		t.Fatalf("plugin register --timeout 1s, as advised: %v", err)
	}
	if _, err := h.e.RegisterVolume(h.ctx, registered("v", "ext-1")); err != nil {
		t.Fatalf("register again with the plugin's timeout raised to 1s (it answers in 600ms): %v", err)
	}
}
