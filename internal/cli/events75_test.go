package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin that answers CreateVolume or CreateSnapshot with OK but no ID (a plugin that lies
// about IDs) did what was asked; volctl's own check finds the answer unusable and records a
// volume-create or snapshot-create event. That event carries "code": "Unknown" in
// `volctl events --json`, although the RPC ended with OK and nothing answered UNKNOWN:
// docs/json.md says `code` is "the gRPC code of an error the RPC ended with; absent on a
// success, and on a failure volctl found itself", and of `last_code` that such a failure
// "names that RPC with no code, as events do". A script reading the documented contract (the
// help's own `select(.code != null)`) takes it for the plugin failing the call with UNKNOWN,
// i.e. nothing made, when the plugin made the volume or took the snapshot. Correct: the
// event names the RPC and leaves `code` out. The fault: csi.CodeOf of volctl's own
// unreadError is codes.Unknown, which the engine stores as if the plugin had answered it
// (volumes_create.go's "create answered unreadably" event, snapshots.go's snapshot-create).
// Found by helper review75.
func TestUnreadableCreateAnswerEventHasNoCode(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		run        func(t *testing.T, h *cliHarness)
	}{
		{"volume", "volume-create", func(t *testing.T, h *cliHarness) {
			h.mem.SetAnswerWithoutID(true)
			if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "mem",
				Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err == nil {
				t.Fatal("create succeeded with an answer that has no volume ID")
			}
		}},
		{"snapshot", "snapshot-create", func(t *testing.T, h *cliHarness) {
			h.createVolume(t, "v", spec.SingleNodeWriter)
			h.mem.SetAnswerWithoutID(true)
			if _, err := h.e.CreateSnapshot(h.ctx, "v", "s1", nil); err == nil {
				t.Fatal("snapshot succeeded with an answer that has no snapshot ID")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCLIHarness(t)
			tc.run(t, h)
			out := eventsJSON(t, h.e, engine.EventFilter{VolumeID: "v", Kind: tc.kind})
			var evs []map[string]any
			if err := json.Unmarshal([]byte(out), &evs); err != nil {
				t.Fatalf("events --json: %v\n%s", err, out)
			}
			found := false
			for _, ev := range evs {
				if msg, _ := ev["message"].(string); !strings.Contains(msg, "answered unreadably") {
					continue
				}
				found = true
				if ev["rpc"] == nil {
					t.Errorf("the %s event does not name the RPC:\n%s", tc.kind, out)
				}
				if code, ok := ev["code"]; ok {
					t.Errorf("the %s event of an answer the plugin gave with OK (no ID) has \"code\": %v; "+
						"docs/json.md: code is absent on a success and on a failure volctl found itself\n%s", tc.kind, code, out)
				}
			}
			if !found {
				t.Fatalf("no %s event says the answer was unreadable:\n%s", tc.kind, out)
			}
		})
	}
}
