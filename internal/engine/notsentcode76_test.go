package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// A claim's RPC not sent because the plugin, restarted mid-operation, could not be checked
// again for volctl's own reason (its new instance answers GetPluginInfo with an empty name,
// which the CSI spec forbids) was recorded with "code": "Unknown", the event and the claim's
// last_code alike, as if the plugin had answered the RPC UNKNOWN: notSent took the question's
// error's code, and CodeOf gives UNKNOWN to an error that is volctl's own. docs/json.md says
// code is absent on a failure volctl found itself; the event names the RPC with no code, and
// the error does not say "Unknown" either.
func TestRPCNotSentForVolctlsOwnCheckRecordsNoCode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	done, unlock := claimWaitingForTheControllerLock(t, h)
	h.restartWith(func(c *csitest.MemConfig) { c.Name = "" })
	unlock()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "empty name") {
		t.Fatalf("claim through a plugin restarted with an empty name = %v; want it refused, saying the name is empty", err)
	}
	if strings.Contains(err.Error(), "Unknown") {
		t.Errorf("claim's error %q gives a code no plugin answered", err)
	}
	evs, lerr := h.e.Events(h.ctx, 0, EventFilter{VolumeID: "v"})
	if lerr != nil {
		t.Fatal(lerr)
	}
	found := false
	for _, ev := range evs {
		if !strings.Contains(ev.Message, "empty name") {
			continue
		}
		found = true
		if ev.Code != "" {
			t.Errorf("event %q of an RPC not sent for volctl's own check has code %q; want none (docs/json.md)", ev.Message, ev.Code)
		}
	}
	if !found {
		t.Fatalf("no event says the plugin's name is empty: %+v", evs)
	}
	for _, c := range h.liveClaims("v") {
		if c.LastCode != "" {
			t.Errorf("claim %s's last_code = %q after an RPC not sent for volctl's own check; want none", c.Alloc, c.LastCode)
		}
	}
}
