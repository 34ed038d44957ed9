package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestClaimAgainOfAnUnmountedTargetRecordsTheRPCItsCheckFailedAfter: claim v/a is published,
// and its target then loses its mount (`volume status v --json` says `"target_unmounted": true`,
// its `covered` advising `volctl reconcile`). The alloc claims again; the plugin, which keeps
// its own record of the publish, answers NodePublishVolume OK without mounting anything, and
// volctl's check after it (publishedWhereAsked, checkTarget) finds the target "not a mount
// point": the claim is held degraded for reconcile, exit 1. The failure's words begin
// "NodePublishVolume: plugin "mem" answered OK ...", but the claim's `last_rpc` is absent and
// the failure event ("claim left node-staged for reconcile: NodePublishVolume: ...") has no
// `rpc`: the check's error is a plain badAnswerf, not a checkFailure, so lastRPC finds none.
// docs/json.md says a failure volctl's own check found after an RPC names that RPC (no code) in
// the claim's `last_rpc` and in the event's `rpc`, as the checks after NodeUnpublishVolume and
// NodeUnstageVolume do (TestCheckFailuresNameTheRPCTheyCheckedAfter): a script selecting on
// `.rpc == "NodePublishVolume"` or `last_rpc` misses this one. Correct: `last_rpc` and the
// event's `rpc` are "NodePublishVolume", `last_code`/`code` absent.
// Found by helper review77 (json).
func TestClaimAgainOfAnUnmountedTargetRecordsTheRPCItsCheckFailedAfter(t *testing.T) {
	requireMount(t)
	h := newCLIHarness(t)
	h.createVolume(t, "v", spec.SingleNodeWriter)
	h.claim(t, "v", "a")
	t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "v", "a") })
	info, err := h.e.VolumeShown(h.ctx, "v")
	if err != nil || len(info.Claims) != 1 {
		t.Fatalf("volume v: %+v, %v", info, err)
	}
	target := info.Claims[0].TargetPath
	if err := unix.Unmount(target, 0); err != nil {
		t.Fatal(err)
	}
	// From here the plugin answers NodePublishVolume OK and mounts nothing, every time: the
	// claim again asks once more after taking a first such answer back (
	// TestRestoreOfALostTargetThroughAPluginThatRemembersItsPublishTakesOnePass), and a plugin
	// that only remembered its publish would mount then.
	h.mem.Reconfigure(func(c *csitest.MemConfig) {
		c.MakeTarget = func(target string) error { return os.MkdirAll(target, 0o750) }
	})
	code, out, errOut := h.runReported("volume", "status", "v", "--jq", ".claims[0].target_unmounted")
	if code != 0 || strings.TrimSpace(out) != "true" {
		t.Fatalf("precondition: volume status of v, its target %s unmounted: exit %d, target_unmounted %q (%s)", target, code, out, errOut)
	}
	code, out, errOut = h.runReported("volume", "claim", "v", "--alloc", "a", "--json")
	if code != ExitError || out != "" || !strings.Contains(errOut, "not a mount point") {
		t.Fatalf("precondition: the claim again of v/a, the plugin answering NodePublishVolume OK without mounting: exit %d, stdout %q, stderr %q; "+
			"want exit 1 with its check's failure on stderr", code, out, errOut)
	}

	code, out, errOut = h.runReported("volume", "status", "v", "--json")
	if code != 0 {
		t.Fatalf("volume status v --json: exit %d: %s", code, errOut)
	}
	var v struct {
		Claims []map[string]any `json:"claims"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Claims) != 1 {
		t.Fatalf("volume status v --json: %v\n%s", err, out)
	}
	c := v.Claims[0]
	if le, _ := c["last_error"].(string); !strings.HasPrefix(le, csi.RPCNodePublishVolume+": ") {
		t.Fatalf("precondition: claim's last_error %q does not begin with %s", le, csi.RPCNodePublishVolume)
	}
	if c["last_rpc"] != csi.RPCNodePublishVolume || c["last_code"] != nil {
		t.Errorf("claim v/a, held after volctl's check after NodePublishVolume failed: last_rpc %v, last_code %v (last_error %q); "+
			"want last_rpc %q and no last_code, as docs/json.md says of a failure volctl's own check found after an RPC",
			c["last_rpc"], c["last_code"], c["last_error"], csi.RPCNodePublishVolume)
	}

	code, out, errOut = h.runReported("events", "--volume", "v", "--kind", "claim", "--json")
	if code != 0 {
		t.Fatalf("events --json: exit %d: %s", code, errOut)
	}
	var evs []map[string]any
	if err := json.Unmarshal([]byte(out), &evs); err != nil {
		t.Fatalf("events --json: %v\n%s", err, out)
	}
	found := false
	for _, ev := range evs {
		msg, _ := ev["message"].(string)
		if !strings.Contains(msg, "for reconcile") || !strings.Contains(msg, "not a mount point") {
			continue
		}
		found = true
		if ev["rpc"] != csi.RPCNodePublishVolume || ev["code"] != nil {
			t.Errorf("the claim's failure event %q: rpc %v, code %v; want rpc %q and no code "+
				"(`volctl events --json | jq 'select(.rpc==\"NodePublishVolume\")'` misses it)", msg, ev["rpc"], ev["code"], csi.RPCNodePublishVolume)
		}
	}
	if !found {
		t.Fatalf("no failure event of the claim again in events --json:\n%s", out)
	}
}
