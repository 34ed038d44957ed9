package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A volume registered with no size recorded, which its plugin lists at 1 GiB: a create of it
// with capacity_min 1GiB, a registration again with it, or `volume expand --size 1GiB` grew
// nothing, and said "expanded to the spec's capacity_min" or "expanded to 1.0 GiB". Each now
// says its plugin lists it at that, not grown; and a plugin that cannot list it is said to
// have been asked, the volume perhaps at that size already (engine.Sized).
func TestAVolumeOfUnknownSizeIsNotSaidToBeExpanded(t *testing.T) {
	src := strings.ReplaceAll(createSpec, "%s", "r")
	for _, tt := range []struct {
		how  string
		run  func(h *cliHarness, ios *iostreams.IOStreams) error
		want string
	}{
		{"create", func(h *cliHarness, ios *iostreams.IOStreams) error {
			files := specFiles(map[string]string{"r.hcl": src + "capacity_min = \"1GiB\"\n"})
			return volumeSubmitRun(h.ctx, &VolumeSubmitOptions{IO: ios, Engine: h.engine, ReadFile: files, Verb: spec.VerbCreate, Files: []string{"r.hcl"}})
		}, `Volume "r" exists; its plugin lists it at the spec's capacity_min or more, so it was not grown; its size, not known before, is recorded now (external ID "ext-1", 1.0 GiB)`},
		{"register", func(h *cliHarness, ios *iostreams.IOStreams) error {
			files := specFiles(map[string]string{"r.hcl": src + "external_id = \"ext-1\"\ncapacity_min = \"1GiB\"\n"})
			return volumeSubmitRun(h.ctx, &VolumeSubmitOptions{IO: ios, Engine: h.engine, ReadFile: files, Verb: spec.VerbRegister, Files: []string{"r.hcl"}})
		}, `Volume "r" updated: its plugin lists it at the spec's capacity_min or more, so it was not grown; its size, not known before, is recorded now (1.0 GiB)`},
		{"expand", func(h *cliHarness, ios *iostreams.IOStreams) error {
			return volumeExpandRun(h.ctx, &VolumeExpandOptions{IO: ios, Engine: h.engine, ID: "r", Size: "1GiB"})
		}, `Volume "r" is already 1.0 GiB, as its plugin lists it (volctl had no size recorded for it, and records this one now)`},
		{"expand with a limit", func(h *cliHarness, ios *iostreams.IOStreams) error {
			return volumeExpandRun(h.ctx, &VolumeExpandOptions{IO: ios, Engine: h.engine, ID: "r", Size: "1GiB", Limit: "2GiB"})
		}, `Volume "r" is already 1.0 GiB, as its plugin lists it (volctl had no size recorded for it, and records this one now); its capacity_max is now 2.0 GiB`},
	} {
		t.Run(tt.how, func(t *testing.T) {
			h := newCLIHarness(t)
			h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
			ios, _, out, _ := iostreams.Test()
			files := specFiles(map[string]string{"r.hcl": src + "external_id = \"ext-1\"\n"})
			if err := volumeSubmitRun(h.ctx, &VolumeSubmitOptions{IO: ios, Engine: h.engine, ReadFile: files, Verb: spec.VerbRegister, Files: []string{"r.hcl"}}); err != nil {
				t.Fatal(err)
			}
			ios, _, out, _ = iostreams.Test()
			if err := tt.run(h, ios); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(out.String()); got != tt.want {
				t.Errorf("%s of a volume of unknown size the plugin lists at the size asked:\n got %q\nwant %q", tt.how, got, tt.want)
			}
			if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
				t.Errorf("ControllerExpandVolume sent %d times to a volume listed at the size asked", n)
			}
		})
	}
	v := engine.VolumeInfo{}
	v.ID, v.ExternalID, v.CapacityBytes = "r", "ext-1", 1<<30
	if got, want := volumeSubmittedLine(spec.VerbCreate, v, engine.Sized, nil),
		`Volume "r" exists; its size, not known before, is at least the spec's capacity_min now, which it may have had already (external ID "ext-1", 1.0 GiB)`; got != want {
		t.Errorf("a create that asked a plugin that cannot list the volume:\n got %q\nwant %q", got, want)
	}
}
