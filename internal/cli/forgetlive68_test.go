package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// The forget (store/forget.go) rewrote, since earlier in round 68, the events' volume_id, alloc
// and plugin_id columns with the scrubber of the values that left the state: a substring
// scrubber (3 bytes and up, case-folded from 8), applied to every row, not only the deleted
// volume's. Alloc "postgres-0" holds a live claim on volume "data"; volume "old-pg", with
// secrets {username = "postgres"}, is deleted. Every event of the live claim was renamed alloc
// "[REDACTED]-0" in the log for good (no plugin data holds "postgres" to keep it), so `volctl
// events --alloc postgres-0` found none of the live claim's history. The docs accept that loss
// for the deleted volume's own name only. Found by helper review68 (a review of that round's
// own change).
func TestForgetDoesNotRenameALiveClaimsEvents(t *testing.T) {
	h := newCLIHarness(t)
	ctx := context.Background()
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := h.e.CreateVolume(ctx, spec.Volume{ID: "data", Name: "data", Type: "csi", PluginID: "mem", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Claim(ctx, engine.ClaimRequest{VolumeID: "data", Alloc: "postgres-0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(ctx, spec.Volume{ID: "old-pg", Name: "old-pg", Type: "csi", PluginID: "mem",
		Secrets: spec.Secrets{"username": "postgres", "password": "pw-rv68-longer"}, Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	run := func(e *engine.Engine) string { return eventsJSON(t, e, engine.EventFilter{Alloc: "postgres-0"}) }
	if before := run(h.e); !strings.Contains(before, `"kind": "claim"`) {
		t.Fatalf("premise: events --alloc postgres-0 before the delete:\n%s", before)
	}
	if err := h.e.DeleteVolume(ctx, "old-pg"); err != nil {
		t.Fatal(err)
	}
	oe := openEngine(t, h.state)
	raw, err := oe.Events(ctx, 0, engine.EventFilter{VolumeID: "data"})
	if err != nil {
		t.Fatal(err)
	}
	var allocs []string
	for _, ev := range raw {
		allocs = append(allocs, ev.Kind+":"+ev.Alloc)
	}
	if after := run(oe); !strings.Contains(after, `"kind": "claim"`) {
		t.Errorf("events --alloc postgres-0, its claim still live, after another volume whose secret is \"postgres\" was deleted: "+
			"its claim event is gone (the log's allocs of volume data now %q):\n%s", allocs, after)
	}
}
