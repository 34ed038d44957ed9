package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A plugin that never answers an RPC of the create/delete, expand or snapshot paths costs a
// command one timeout, not one per retry attempt, and the error names the RPC, the plugin and
// the timeout, as on the claim and release paths (TestHungPublishRPCIsSentOnce).
func TestHungRPCOfEveryPathIsBoundedAndNamed(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	for _, tc := range pathRPCCases() {
		t.Run(tc.rpc, func(t *testing.T) {
			h := newHarness(t, nil)
			err := h.againstAHang(tc.setup, tc.rpc, tc.act)
			if err == nil {
				t.Fatalf("%s hung, and the command succeeded", tc.rpc)
			}
			if n := h.callsAfterIdle(t, tc.rpc); n != 1 {
				t.Errorf("%s sent %d times by one command against a hung plugin, want once", tc.rpc, n)
			}
			for _, want := range []string{tc.rpc, `"mem"`, hungTimeout.String()} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s (the RPC, the plugin and the timeout)", err, want)
				}
			}
		})
	}
}

// againstAHang runs setup, then act against the plugin hanging rpc, as a command would
// (hungConfig), the plugin's call counts reset between the two; it returns act's error.
func (h *harness) againstAHang(setup func(*harness), rpc string, act func(*harness) error) error {
	setup(h)
	h.open(hungConfig())
	h.faults.ResetCounts()
	h.faults.Hang(rpc)
	return act(h)
}

// rpcCase is an RPC of a command's path: setup runs before the RPC is made to hang (or fail),
// act is the command that meets it.
type rpcCase struct {
	rpc   string
	setup func(h *harness)
	act   func(h *harness) error
}

// pathRPCCases are the RPCs of the create/delete, expand and snapshot paths, each with the
// command that sends it, as TestHungRPCOfEveryPathIsBoundedAndNamed and
// TestHungRPCHoldsNoOtherPluginsWork hang them.
func pathRPCCases() []rpcCase {
	return []rpcCase{
		{csi.RPCDeleteVolume, func(h *harness) { h.create(volume("v")) },
			func(h *harness) error { return h.e.DeleteVolume(h.ctx, "v") }},
		{csi.RPCControllerExpandVolume, func(h *harness) { h.create(volume("v")) },
			func(h *harness) error { _, err := h.e.ExpandVolume(h.ctx, "v", 2<<30, 0); return err }},
		{csi.RPCNodeExpandVolume, func(h *harness) {
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
		}, func(h *harness) error { _, err := h.e.ExpandVolume(h.ctx, "v", 2<<30, 0); return err }},
		{csi.RPCCreateSnapshot, func(h *harness) { h.create(volume("v")) },
			func(h *harness) error { _, err := h.e.CreateSnapshot(h.ctx, "v", "s", nil); return err }},
		{csi.RPCDeleteSnapshot, func(h *harness) {
			h.create(volume("v"))
			if _, err := h.e.CreateSnapshot(h.ctx, "v", "s", nil); err != nil {
				h.t.Fatal(err)
			}
		}, func(h *harness) error { return h.e.DeleteSnapshot(h.ctx, "mem", "s", nil) }},
	}
}
