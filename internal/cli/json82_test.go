package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/spec"
)

// TestExportNomadFlagNotInNFCIsAUsageError: `volctl export nomad hv --plugin-root DIR` with DIR
// decomposed (NFD, as macOS tools name it), or a --datacenter so spelled, is refused before
// anything is written, naming the flag (nomad.writtenAsGiven, this round). But the refusal
// exits 1, a runtime error, where the same flag refused for any other reason (--plugin-root
// relative, --nomad-data-dir relative, --volctl-path a flag, --node-id invalid) is a usage
// error, exit 2: the root help's rule is that 2 is what is refused before anything is done,
// and a script telling "bad invocation, fix the flags" from "something failed, retry" reads 1
// as a failure worth running again, which fails the same way each time. Correct: a flag value
// refused as not in Unicode normal form C is exit 2 (a usage error), stdout empty, nothing
// written. Found by helper review82 (json).
func TestExportNomadFlagNotInNFCIsAUsageError(t *testing.T) {
	for _, tc := range []struct{ flag, value string }{
		{"--plugin-root", "/srv/cafe\u0301-volumes"},
		{"--datacenter", "cafe\u0301"},
	} {
		t.Run(strings.TrimPrefix(tc.flag, "--"), func(t *testing.T) {
			h := newCLIHarness(t)
			hostpathVolumeToExport(t, h, hostpath.Config{}, nil)
			out := filepath.Join(t.TempDir(), "out")
			args := []string{"export", "nomad", "hv", "--volctl-path", "/usr/local/bin/volctl", "--nomad-node", "edge-7", "--out", out, tc.flag, tc.value}
			if tc.flag != "--plugin-root" {
				args = append(args, "--plugin-root", "/srv/volumes")
			}
			code, stdout, stderr := runOnOut(h.ctx, h.e, args...)
			if code == ExitOK || !strings.Contains(stderr, tc.flag) || !strings.Contains(stderr, "normal form C") {
				t.Fatalf("export nomad %s %+q: exit %d, stderr %q; precondition: refused naming the flag as not in NFC", tc.flag, tc.value, code, stderr)
			}
			if ents, _ := os.ReadDir(out); len(ents) > 0 || stdout != "" {
				t.Fatalf("export nomad %s %+q: refused, but wrote %d file(s) or printed %q", tc.flag, tc.value, len(ents), stdout)
			}
			if code != ExitUsage {
				t.Errorf("export nomad %s %+q: refused before anything was written, naming the flag, but exit %d; want %d, as every other refusal of a flag's value "+
					"(--plugin-root relative is exit %d):\n%s", tc.flag, tc.value, code, ExitUsage, ExitUsage, stderr)
			}
		})
	}
}

// TestNodeOnlyExpansionRefusedForGoodDoesNotSayItStaysOwed: a plugin that expands on the node
// alone (node EXPAND_VOLUME, no controller EXPAND_VOLUME, 2MiB at most) is asked `volume expand
// v --size 4MiB --json`; its NodeExpandVolume at the claim's target answers OUT_OF_RANGE.
// This round's fix puts the record back (nodeOnlyRefused): capacity 1MiB, no node expansion
// owed, as `volume status v --json` shows (no node_expansion_owed). But the error (exit 1,
// stdout empty) and the volume-expand event that records the refusal end with the per-target
// failure's own words, "(it stays owed: run `volctl volume expand v --size 4MiB` again or
// `volctl reconcile`)": nothing is owed, reconcile has nothing to send, and the expand run
// again is refused the same way for good. A refusal whose advice does not work when followed,
// contradicting the "nothing grew; stays recorded at 1MiB" before it. Correct: the refusal says
// nothing is owed and advises a size the plugin takes (or nothing), never the same expand or
// reconcile. Found by helper review82 (json).
func TestNodeOnlyExpansionRefusedForGoodDoesNotSayItStaysOwed(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume = false
		c.MaxVolumeSize = 2 << 20
	})
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	h.claim(t, "v", "web-0")
	t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "v", "web-0") })

	code, stdout, stderr := runOnOut(h.ctx, h.e, "volume", "expand", "v", "--size", "4MiB", "--json")
	if code == ExitOK || stdout != "" || !strings.Contains(stderr, "grew nothing") {
		t.Fatalf("volume expand v --size 4MiB --json through a plugin refusing 4MiB: exit %d, stdout %q, stderr %q; precondition: refused, the record put back", code, stdout, stderr)
	}
	code, out, errOut := runOnOut(h.ctx, h.e, "volume", "status", "v", "--json")
	if code != ExitOK {
		t.Fatalf("volume status v --json: exit %d: %s", code, errOut)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err, out)
	}
	if st["node_expansion_owed"] != nil {
		t.Fatalf("precondition: the refused expansion is still owed (node_expansion_owed %v)", st["node_expansion_owed"])
	}
	code, out, errOut = runOnOut(h.ctx, h.e, "events", "--json", "--kind", "volume-expand")
	if code != ExitOK {
		t.Fatalf("events --json: exit %d: %s", code, errOut)
	}
	var evs []struct{ Message string }
	if err := json.Unmarshal([]byte(out), &evs); err != nil || len(evs) == 0 {
		t.Fatalf("events --json: %v\n%s", err, out)
	}
	last := evs[len(evs)-1].Message
	for what, text := range map[string]string{"the refusal (stderr)": stderr, "its volume-expand event": last} {
		if strings.Contains(text, "stays owed") {
			again, _, againErr := runOnOut(h.ctx, h.e, "volume", "expand", "v", "--size", "4MiB")
			t.Errorf("%s says the expansion \"stays owed\" and advises the same expand again or reconcile, while volume status shows nothing owed "+
				"(the record was put back) and the advised expand again exits %d the same way (%s):\n%s", what, again, strings.TrimSpace(againErr), text)
		}
	}
}
