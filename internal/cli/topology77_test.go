package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestExportNomadNodeIDOtherThanARegisteredVolumesTopologyIsNotSilent: `export nomad
// --node-id` refuses a hostpath volume whose topology names another node than the plugin job
// would serve, since Nomad would then place it on no node the job serves
// (TestExportNomadNodeIDOtherThanTheVolumesTopologyIsNotSilent). The check reads only
// AccessibleTopology, a created volume's: a registered volume's topology is its
// topology_request.required (volumeTopologies, and the file export writes requires exactly
// that), so a registered volume requiring node edge-7 is exported with --node-id edge-8 with
// exit 0 and nothing said, and every job using it is unplaceable in Nomad. Correct behaviour:
// the registered volume's required topology is checked as a created one's accessible topology
// is, refused naming both nodes and the --node-id that works. Found by helper review77.
func TestExportNomadNodeIDOtherThanARegisteredVolumesTopologyIsNotSilent(t *testing.T) {
	h := newCLIHarness(t)
	registeredOnEdge7(t, h, "edge-7")
	var dir string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes = []string{"rv"}
		o.Plugin.VolctlPath = "/usr/local/bin/volctl"
		o.Plugin.NodeID = "edge-8"
		dir = o.OutDir
	})
	vol, _ := os.ReadFile(filepath.Join(dir, "volume-rv.hcl"))
	if err == nil {
		t.Fatalf("export with --node-id edge-8 of registered volume rv, whose required topology names edge-7: exit 0 (stderr %q); "+
			"the volume file requires node edge-7, the plugin job serves edge-8, Nomad places it nowhere:\n%s", stderr, vol)
	}
	if ExitCode(err) != ExitUsage {
		t.Errorf("refused with exit %d, want %d: %v", ExitCode(err), ExitUsage, err)
	}
	for _, want := range []string{`"edge-7"`, `"edge-8"`, `volume "rv"`, "--node-id edge-7"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %s", err, want)
		}
	}
}

// TestCreateWithATopologyThroughAPluginWithoutAccessibilityConstraints: the CSI spec says a
// CreateVolume's accessibility_requirements "SHALL NOT be specified unless the SP has the
// VOLUME_ACCESSIBILITY_CONSTRAINTS plugin capability". volctl sends the spec's
// topology_request to every plugin (csi.Client.CreateVolume, wire.TopologyRequirement), never
// looking at the capability it fingerprints (csi.PluginCapabilities.VolumeAccessibilityConstraints).
// Through a plugin without it, whose node states no topology (as such a plugin's does), the
// create exits 0, "created", and records the volume accessible only from {zone=a}
// (volumeTopologies falls back to the required list): no claim of it is ever admitted on
// this host, and the warning's way out, "restart the plugin with a topology the volume is
// accessible from", cannot be followed: the plugin has no topology to restart with. The user
// is left with storage made and a record no claim can use. Correct behaviour: a create with
// a topology_request through a plugin lacking VOLUME_ACCESSIBILITY_CONSTRAINTS is refused
// before CreateVolume is sent, naming the plugin and the capability and saying to leave
// topology_request out; nothing is sent, nothing recorded.
// Found by helper review77 (topology).
func TestCreateWithATopologyThroughAPluginWithoutAccessibilityConstraints(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	if cfg.Plugin.VolumeAccessibilityConstraints || cfg.Topology != nil {
		t.Fatalf("precondition: the default in-memory plugin has VOLUME_ACCESSIBILITY_CONSTRAINTS or a node topology: %+v", cfg)
	}
	mem := csitest.NewMemPlugin(cfg)
	_, e, eng := serveMem(t, mem)
	src := strings.ReplaceAll(createSpec, "%s", "z") + `topology_request {
  required {
    topology { segments { zone = "a" } }
  }
}
`
	ios, _, out, errOut := iostreams.Test()
	o := &VolumeSubmitOptions{IO: ios, Engine: eng, Verb: spec.VerbCreate, Files: []string{"z.hcl"},
		ReadFile: specFiles(map[string]string{"z.hcl": src})}
	err := volumeSubmitRun(t.Context(), o)
	for _, c := range mem.Calls() {
		if c.RPC == csi.RPCCreateVolume {
			t.Errorf("CreateVolume was sent (%+v) to a plugin without VOLUME_ACCESSIBILITY_CONSTRAINTS for a spec with a topology_request", c.Request)
		}
	}
	if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "VOLUME_ACCESSIBILITY_CONSTRAINTS") || !strings.Contains(err.Error(), "topology_request") {
		t.Fatalf("create with a topology_request through a plugin without VOLUME_ACCESSIBILITY_CONSTRAINTS: exit %d, %v (stdout %q, stderr %q); want exit %d naming the capability and topology_request",
			ExitCode(err), err, out.String(), errOut.String(), ExitUsage)
	}
	if _, verr := e.Volume(t.Context(), "z"); verr == nil {
		t.Errorf("volume z is recorded after its create was refused")
	}
}

// registeredOnEdge7 serves a hostpath plugin "hp" on node edge-7, creates a volume there,
// forgets it (the storage stays) and registers it again as "rv", as a volume made elsewhere is,
// its topology_request.required naming nodes (one topology each), and checks that it is
// schedulable here.
func registeredOnEdge7(t *testing.T, h *cliHarness, nodes ...string) {
	t.Helper()
	hostpathVolumeToExport(t, h, hostpath.Config{}, &spec.Exec{Command: "volctl",
		Args: []string{"plugin", "serve", "hostpath", "--root", t.TempDir(), "--node-id", "edge-7"}})
	info, err := h.e.Volume(h.ctx, "hv")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.e.DeregisterVolumeReleasing(h.ctx, "hv", false); err != nil {
		t.Fatal(err)
	}
	var required []spec.Topology
	for _, n := range nodes {
		required = append(required, spec.Topology{Segments: map[string]string{hostpath.TopologyKey: n}})
	}
	if _, err := h.e.RegisterVolume(h.ctx, spec.Volume{ID: "rv", Name: "rv", Type: "csi", PluginID: "hp", ExternalID: info.ExternalID,
		Capabilities:    []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		TopologyRequest: &spec.TopologyRequest{Required: required}}); err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "rv"); err != nil || !v.Schedulable {
		t.Fatalf("precondition: rv, registered on edge-7's plugin, accessible from %v, is not schedulable here (%v): %+v", nodes, err, v.Schedulability())
	}
}
