package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// expandEvents returns the messages of the volume's volume-expand events.
func (h *harness) expandEvents(vol string) string { return h.eventMessages("volume-expand", vol) }

// eventMessages returns the messages of the events of one kind about a volume, one a line.
func (h *harness) eventMessages(kind, vol string) string {
	h.t.Helper()
	return strings.Join(h.eventsOf(kind, vol, ""), "\n")
}

// A plugin that answers ControllerExpandVolume with more than the limit asked (it allocates in
// large units): the storage grew and cannot be shrunk back, so the record says the size it is,
// and the expand fails naming the plugin, the size answered and the limit, with an event; the
// same expand again changes nothing (the size asked is reached).
func TestExpandAnsweredAboveTheLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a")) // 1 MiB
	h.mem.AnswerExpandWith(8 * mib)

	_, err := h.e.ExpandVolume(h.ctx, "a", 2*mib, 4*mib)
	if err == nil || !strings.Contains(err.Error(), `plugin "mem"`) || !strings.Contains(err.Error(), "8MiB") || !strings.Contains(err.Error(), "4MiB") {
		t.Errorf("expand to 2-4 MiB answered with 8 MiB: %v; want it failed naming the plugin, 8MiB and the 4MiB limit", err)
	}
	if v := h.volumeInfo("a"); v.CapacityBytes != 8*mib {
		t.Errorf("capacity recorded as %d after the plugin answered %d", v.CapacityBytes, 8*mib)
	}
	if msgs := h.expandEvents("a"); !strings.Contains(msgs, "8MiB") || !strings.Contains(msgs, "above") {
		t.Errorf("volume-expand events %q, want one saying the answer was above the limit", msgs)
	}
	h.mem.AnswerExpandWith(0)
	h.faults.ResetCounts()
	if _, err := h.e.ExpandVolume(h.ctx, "a", 2*mib, 4*mib); err == nil {
		t.Errorf("expand to 2 MiB of an 8 MiB volume: no error, want a refusal to shrink")
	}
	if n := h.faults.Calls(csi.RPCControllerExpandVolume); n != 0 {
		t.Errorf("ControllerExpandVolume sent %d times to expand an 8 MiB volume to 2 MiB", n)
	}
}

// A node that answers NodeExpandVolume OK with an answer volctl cannot take did not expand the
// file system as asked: less than the size asked, or a negative capacity_bytes (treated as the
// controller's answer is, TestExpandAnsweredWithANegativeCapacity). The node expansion stays
// owed and the expand fails naming what was answered; answered properly, the debt is paid.
func TestNodeExpandAnswerNotTakenStaysOwed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		answer int64
		want   []string // in the error
	}{
		{"less than asked", 2 * mib, []string{`plugin "mem"`, "2MiB", "4MiB"}},
		{"negative capacity", -5, []string{"capacity_bytes -5", "stays owed"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
			h.mem.AnswerNodeExpandWith(tt.answer)

			_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("node expansion to 4 MiB answered with %d: %v; want it failed, saying %q", tt.answer, err, w)
				}
			}
			if got := h.owed("v"); got != 4*mib {
				t.Errorf("node expansion owed = %d after the node answered %d, want %d", got, tt.answer, 4*mib)
			}
			h.mem.AnswerNodeExpandWith(0)
			if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
				t.Fatalf("expand again: %v", err)
			}
			if got := h.owed("v"); got != 0 {
				t.Errorf("node expansion still owed after the node did it: %d", got)
			}
		})
	}
}

// A plugin that expands only on the node answers NodeExpandVolume with the size the volume now
// is: more than asked is recorded (the storage is that size), and above the limit the expand
// fails, naming the plugin and both sizes, as a controller's answer does.
func TestNodeOnlyExpandAnsweredAboveTheLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.mem.AnswerNodeExpandWith(8 * mib)

	_, err := h.e.ExpandVolume(h.ctx, "v", 2*mib, 4*mib)
	if err == nil || !strings.Contains(err.Error(), `plugin "mem"`) || !strings.Contains(err.Error(), "8MiB") || !strings.Contains(err.Error(), "4MiB") {
		t.Errorf("node-only expand to 2-4 MiB answered with 8 MiB: %v; want it failed naming the plugin, 8MiB and 4MiB", err)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != 8*mib || v.NodeExpansionOwed != 0 {
		t.Errorf("recorded capacity %d, owed %d; want %d (what the node answered), nothing owed", v.CapacityBytes, v.NodeExpansionOwed, 8*mib)
	}
}

// A ControllerExpandVolume whose answer is lost every time (the plugin grew the storage, volctl
// saw UNAVAILABLE): the expand fails, saying the storage may have grown and to run it again, and
// records nothing new; the same expand run again is answered (the RPC is idempotent) and records
// the size.
func TestExpandWhoseAnswerIsLostIsRetried(t *testing.T) {
	t.Parallel()
	// A plugin that cannot say a volume's size (no LIST_VOLUMES nor GET_VOLUME): one that can is
	// asked before the RPC is sent again, and its listing ends the expand
	// (TestExpandRetryAfterALostAnswerAsksTheListingFirst).
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.ExpandVolume, c.Controller.ListVolumes = false, false })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err == nil {
		t.Fatal("expand whose answers were all lost succeeded")
	}
	if !strings.Contains(err.Error(), "may have expanded") || !strings.Contains(err.Error(), "run the same `volctl volume expand v --size 4MiB` again") {
		t.Errorf("expand whose answers were lost: %v; want it to say the plugin may have expanded it and to run the same expand again", err)
	}
	if n := h.faults.Calls(csi.RPCControllerExpandVolume); n != fastRetry.Attempts {
		t.Errorf("ControllerExpandVolume sent %d times, want %d", n, fastRetry.Attempts)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("the same expand again: %v", err)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != 4*mib {
		t.Errorf("capacity %d after the expand again, want %d", v.CapacityBytes, 4*mib)
	}
}

// A controller that answers node_expansion_required for a plugin whose node service lacks
// EXPAND_VOLUME (its halves disagree): the storage grew, the file system cannot be grown here.
// The expand fails saying so rather than report a size the file system does not have, the node
// expansion is recorded as owed (paid once the node can expand), and the same expand again, or
// reconcile, says it is still owed rather than succeed.
func TestNodeExpansionRequiredOfANodeThatCannotExpand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.ExpandVolume = false })
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.mem.AnswerNodeExpansionRequired(true)

	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err == nil || !strings.Contains(err.Error(), `plugin "mem"`) || !strings.Contains(err.Error(), "EXPAND_VOLUME") {
		t.Errorf("expand answered node_expansion_required by a node without EXPAND_VOLUME: %v; want it failed naming the plugin and the capability", err)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != 4*mib || v.NodeExpansionOwed != 4*mib {
		t.Errorf("capacity %d, node expansion owed %d; want %d and %d", v.CapacityBytes, v.NodeExpansionOwed, 4*mib, 4*mib)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Error("the same expand again succeeded with the node expansion still owed")
	}
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Error("reconcile reported no problem with a node expansion owed that the node cannot do")
	}
}

// A controller that answers ControllerExpandVolume OK with a negative capacity_bytes (a size the
// CSI spec never allows) gave an answer volctl cannot use: the expand fails saying the plugin
// may have expanded the volume and to run it again, with an event, and the record keeps the old
// size rather than the size asked, as for an answer not read; the same expand, answered
// properly, records the size.
func TestExpandAnsweredWithANegativeCapacity(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.ExpandVolume = false })
	h.create(volume("v")) // 1 MiB
	h.mem.AnswerExpandWith(-5)

	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err == nil || !strings.Contains(err.Error(), "capacity_bytes -5") || !strings.Contains(err.Error(), "may have expanded") ||
		!strings.Contains(err.Error(), "run the same `volctl volume expand v --size 4MiB` again") {
		t.Errorf("expand answered with capacity -5: %v; want it failed naming the answer, saying the plugin may have expanded it and to run it again", err)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != 1*mib {
		t.Errorf("capacity recorded as %d after an answer of -5, want the old %d", v.CapacityBytes, 1*mib)
	}
	if msgs := h.expandEvents("v"); !strings.Contains(msgs, "capacity_bytes -5") {
		t.Errorf("volume-expand events %q, want one naming the answer", msgs)
	}
	h.mem.AnswerExpandWith(0)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("the same expand again: %v", err)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != 4*mib {
		t.Errorf("capacity %d after the expand again, want %d", v.CapacityBytes, 4*mib)
	}
}

// A ControllerExpandVolume whose answer is lost every time leaves the expansion recorded as
// pending (the plugin may have grown the storage), and reconcile sends it again and records the
// size the plugin answers, without the expand being run again. Before, nothing recorded it:
// reconcile did nothing and the record kept the old size until someone ran the same expand.
func TestExpandWhoseAnswerIsLostIsSentAgainByReconcile(t *testing.T) {
	t.Parallel()
	// A plugin that cannot say a volume's size, as in TestExpandWhoseAnswerIsLostIsRetried.
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.ExpandVolume, c.Controller.ListVolumes = false, false })
	h.create(volume("v"))
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Fatalf("expand whose answers were all lost: %v; want it failed saying reconcile sends it again", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if v := h.volumeInfo("v"); v.CapacityBytes != 4*mib || v.ExpansionPending != 0 {
		t.Errorf("after reconcile: capacity %d, expansion pending %d; want %d, none pending", v.CapacityBytes, v.ExpansionPending, 4*mib)
	}
}

// An expansion the plugin refuses (OUT_OF_RANGE: it did nothing) is not left pending: reconcile
// does not send it again, and status shows none pending.
func TestRefusedExpandIsNotLeftPending(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.ExpandVolume = false; c.MaxVolumeSize = 2 * mib })
	h.create(volume("v"))
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("expand past the plugin's largest size succeeded")
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 0 || v.CapacityBytes != 1*mib {
		t.Errorf("after a refused expand: capacity %d, expansion pending %d; want %d, none pending", v.CapacityBytes, v.ExpansionPending, 1*mib)
	}
	n := h.faults.Calls(csi.RPCControllerExpandVolume)
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if got := h.faults.Calls(csi.RPCControllerExpandVolume); got != n {
		t.Errorf("reconcile sent a refused ControllerExpandVolume again (%d sent, %d before)", got, n)
	}
}
