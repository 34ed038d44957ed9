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

// A volume an older volctl stored decomposed (e U+0301) is named in NFC on the command line, as
// every command names it (engine byStoredID): nomad register hands over the stored one, as
// stored (Nomad gets the ID the plugin's and volctl's paths derive from), rather than answer
// that no such volume exists, and nomad release takes that one back.
func TestNomadRegisterReachesAVolumeStoredDecomposed(t *testing.T) {
	const pre, dec = "caf\u00e9", "cafe\u0301"
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: dec, Name: "v", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	a := newFakeNomad(t)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{pre}}); err != nil {
		t.Fatalf("nomad register %+q of the volume stored as %+q: %v", pre, dec, err)
	}
	if !a.has("default", dec) || a.has("default", pre) {
		t.Fatalf("Nomad has %+q: %v, %+q: %v; want the stored ID only", dec, a.has("default", dec), pre, a.has("default", pre))
	}
	if hs, err := h.e.Handovers(h.ctx, dec); err != nil || len(hs) != 1 {
		t.Fatalf("mark of %+q: %+v %v", dec, hs, err)
	}
	a.mu.Lock()
	delete(a.vols, "default/"+dec)
	a.mu.Unlock()
	if err := nomadReleaseRun(context.Background(), &NomadReleaseOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{pre}}); err != nil {
		t.Fatalf("nomad release %+q: %v", pre, err)
	}
	if hs, _ := h.e.Handovers(h.ctx, dec); len(hs) != 0 {
		t.Fatalf("still marked after the release: %+v", hs)
	}
}
