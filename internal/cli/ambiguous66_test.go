package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// `volume status PREFIX` of an ambiguous prefix now scrubs the matches with redactOutput
// (volume_status.go), in place: `matches := amb.Matches` shares amb.Matches' array, so the
// AmbiguousError's own text is built from IDs already scrubbed, and main's RedactError scrubs
// that text again. A secret of 3 bytes or more that is part of "[REDACTED]" ("EDA", "RED",
// "ACT", "TED") then garbles the marker in the error line: the array above it says
// "[REDACTED]-a", the error "[R[REDACTED]CTED]-a", a name no volume has, where the error line
// is meant to name the IDs the array printed. Before the change, the error was scrubbed once.
// Found by helper review66.
func TestAmbiguousPrefixErrorLineIsScrubbedOnce(t *testing.T) {
	const secret = "EDA"
	h := newCLIHarness(t)
	for _, id := range []string{secret + "-a", secret + "-b"} {
		if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: "n-" + id, Type: "csi", PluginID: "mem",
			Secrets:      spec.Secrets{"token": secret},
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := h.runReported("volume", "status", "ED")
	if code != 2 || !strings.Contains(out, "[REDACTED]-a") {
		t.Fatalf("volume status ED: exit %d, want 2 with the matches listed masked:\n%s%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, secret+"-") {
		t.Fatalf("the secret is shown:\n%s%s", out, errOut)
	}
	if !strings.Contains(errOut, "matches 2 volumes: [REDACTED]-a, [REDACTED]-b") {
		t.Errorf("the ambiguous prefix's error line names the matches otherwise than the list printed above it (\"[REDACTED]-a\"): scrubbed twice, the marker is garbled:\n%s%s", out, errOut)
	}
}
