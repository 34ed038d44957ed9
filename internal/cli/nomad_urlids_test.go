package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A volume ID may hold what a URL gives a meaning to ("?", "#", "%"): volctl asks Nomad about
// that volume, not the one a URL parser makes of it. Unescaped, "db?x" was read back as volume
// "db" (the rest a query), "db#1" as "db", "a%41" as "aA": Nomad's 404 for that other volume
// took the mark of a volume Nomad had just registered, and volctl would claim it beside Nomad.
func TestNomadVolumeIDsAreEscapedInURLs(t *testing.T) {
	for _, id := range []string{"db?x", "db#1", "a%41", "50%", "db?namespace=other"} {
		t.Run(id, func(t *testing.T) {
			h := nomadHarness(t)
			if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: "v", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
				Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
				t.Fatal(err)
			}
			a := newFakeNomad(t)
			marked := func() bool {
				hs, err := h.e.Handovers(h.ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return len(hs) == 1
			}
			ios, _, _, _ := iostreams.Test()
			err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{id}})
			if !a.has("default", id) {
				t.Fatalf("Nomad did not get volume %q: %v", id, err)
			}
			if err != nil || !marked() {
				t.Fatalf("register of volume %q, which Nomad has now: %v (marked: %v)", id, err, marked())
			}
			release := func() error {
				ios, _, _, _ := iostreams.Test()
				return nomadReleaseRun(context.Background(), &NomadReleaseOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{id}})
			}
			if err := release(); ExitCode(err) != ExitConflict || !marked() || !strings.Contains(err.Error(), "still registered") {
				t.Fatalf("release of volume %q while Nomad has it: %v (exit %d, marked: %v), want exit 4", id, err, ExitCode(err), marked())
			}
			a.mu.Lock()
			delete(a.vols, "default/"+id)
			a.mu.Unlock()
			if err := release(); err != nil || marked() {
				t.Fatalf("release of volume %q once Nomad has none: %v (marked: %v)", id, err, marked())
			}
		})
	}
}
