package engine

import (
	"strings"
	"testing"
)

// Two `plugin deregister` of one plugin at once: the one whose write comes second finds the
// plugin gone, and says another volctl deregistered it meanwhile (IsGoneMeanwhile: the
// command line leaves out its advice to look in another state dir), not "not registered" with
// a near ID to try, of a plugin it had just read. The other process's deregistration runs at
// the failpoint between this one's read and its write.
func TestPluginDeregisteredByAnotherMeanwhileIsSaidSo(t *testing.T) {
	h := newHarness(t, nil)
	h.registerPlugin("mem2", h.socket) // a near ID, which "did you mean" named
	other := h.otherProcess()
	ran := false
	h.e.failpointHook = func(name string) {
		if name != "plugin-deregister:read" || ran {
			return
		}
		ran = true
		if err := other.DeregisterPlugin(h.ctx, "mem", false); err != nil {
			t.Errorf("the other process's deregistration: %v", err)
		}
	}
	err := h.e.DeregisterPlugin(h.ctx, "mem", false)
	h.e.failpointHook = nil
	if !ran {
		t.Fatal("the deregistration passed no plugin-deregister:read failpoint")
	}
	if err == nil || !IsGoneMeanwhile(err) || !strings.Contains(err.Error(), `plugin "mem" was deregistered by another volctl meanwhile`) || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("deregistration that lost the race: %v\nwant it to say another volctl deregistered the plugin meanwhile, as gone meanwhile, naming no near ID", err)
	}
}
