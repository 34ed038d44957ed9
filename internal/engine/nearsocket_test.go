package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin on another socket (another process, another storage) whose new volume's ID folds
// equal to a volume of the first plugin: not the same storage, so the create must go through.
func TestNearIDOfAnotherPluginOnAnotherSocketIsNotAConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
	h.mem.AddVolume(csi.Volume{ID: "data-1", CapacityBytes: 1 << 20})
	h.mem.AnswerCreateWith("data-1")
	h.create(volume("a"))
	other := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	other.AddVolume(csi.Volume{ID: "DATA-1", CapacityBytes: 1 << 20})
	other.AnswerCreateWith("DATA-1")
	sock, _ := csitest.Serve(t, csitest.WithServer(other))
	h.registerPlugin("mem2", sock)
	sv := volume("b")
	sv.PluginID = "mem2"
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Errorf("create of b on plugin mem2 (another socket) answered DATA-1, refused for mem's data-1: %v", err)
	}
}

// A case-sensitive plugin that really holds "vol-ab" and "VOL-AB" as two volumes: the create
// answered with the second is refused (the rule's choice), and the refusal must leave a way to
// the volume the plugin made for it: the error should say it can be registered, which register
// allows (it is not held to the rule).
func TestNearRefusalOfACaseSensitivePluginNamesAWayOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil) // case-sensitive
	h.mem.AddVolume(csi.Volume{ID: "vol-ab", CapacityBytes: 1 << 20})
	h.mem.AnswerCreateWith("vol-ab")
	h.create(volume("a"))
	h.mem.AddVolume(csi.Volume{ID: "VOL-AB", CapacityBytes: 1 << 20})
	h.mem.AnswerCreateWith("VOL-AB")
	_, err := h.e.CreateVolume(h.ctx, volume("b"))
	if err == nil {
		t.Fatalf("create b answered with %q beside a's %q was not refused", "VOL-AB", "vol-ab")
	}
	t.Logf("create b: %v", err)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("create b: %v, want a conflict", err)
	}
	if !strings.Contains(err.Error(), "register") {
		t.Errorf("create b refused, the error names no way to use volume %q that a case-sensitive plugin made for it (register is allowed): %v", "VOL-AB", err)
	}
	// The way out register offers works.
	if _, rerr := h.e.RegisterVolume(h.ctx, registered("b", "VOL-AB")); rerr != nil {
		t.Errorf("register b on VOL-AB: %v", rerr)
	}
}
