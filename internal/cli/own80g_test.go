package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestExpandPastTheCapacityMaxOfAHandedOverVolumeIsNotAdvisedALimit: volume "db", 1MiB with
// capacity_max 1MiB, is handed over to Nomad. `volctl volume expand db --size 2MiB` is refused
// (exit 2) with "2MiB is above its capacity_max 1MiB; pass --limit to raise it". Followed,
// `volctl volume expand db --size 2MiB --limit 4MiB` is refused again (exit 4), now because the
// volume is handed over to Nomad, which grows it: the first refusal's advice could never work.
// The capacity_max checks (volumeExpandRun's AboveCapacityMax before the engine, and
// recordedLimit in the engine) run before refuseHandedOver. Correct: a volume handed over is
// refused as handed over first, naming the Nomad deregister and `volctl nomad release` that take
// it back, never advised a --limit that is refused in turn.
// Found by helper review80 (own80g).
// Found by helper review80 (own80g), in this round's own change.
func TestExpandPastTheCapacityMaxOfAHandedOverVolumeIsNotAdvisedALimit(t *testing.T) {
	h := newCLIHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20, CapacityMax: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: "default"}, false, nil); err != nil {
		t.Fatalf("hand over: %v", err)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.Handover == nil || v.RequestedMax != 1<<20 {
		t.Fatalf("precondition: volume db handed over with capacity_max 1MiB; got %+v (%v)", v, err)
	}
	code, out, errOut := h.runReported("volume", "expand", "db", "--size", "2MiB")
	t.Logf("expand --size 2MiB: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	if code == ExitOK {
		t.Fatalf("precondition: expand of a handed-over volume past its capacity_max exited 0")
	}
	if strings.Contains(errOut, "--limit") {
		// Follow the advice, to show where it leads.
		code2, out2, errOut2 := h.runReported("volume", "expand", "db", "--size", "2MiB", "--limit", "4MiB")
		t.Errorf("expand of a volume handed over to Nomad past its capacity_max: exit %d, advised:\n  %s\n"+
			"followed (--limit 4MiB): exit %d, stdout %q, stderr:\n  %s\n"+
			"want it refused as handed over at once (exit 4, naming `volctl nomad release`), not advised a --limit that is refused in turn",
			code, strings.TrimSpace(errOut), code2, out2, strings.TrimSpace(errOut2))
	} else if code != ExitConflict || !strings.Contains(errOut, "handed over") || !strings.Contains(errOut, "nomad release") {
		t.Errorf("expand of a volume handed over to Nomad past its capacity_max: exit %d, stderr %q; want exit 4 naming the handover and `volctl nomad release`", code, errOut)
	}
}
