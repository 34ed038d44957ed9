package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// topologySpecRequesting is createSpec for volume id with a topology_request block (its body) added.
func topologySpecRequesting(id, request string) string {
	return strings.ReplaceAll(createSpec, "%s", id) + "topology_request {\n" + request + "}\n"
}

// A plugin whose CreateVolume answers accessible_topology with a topology holding no segments
// (`[{}]`: a driver whose topology key is not configured builds one so), for a spec whose
// topology_request requires zone a, while its node is in zone b. volctl takes the answer
// (csi's topologiesOverlap reads an empty topology as within every requisite one, and
// checkVolumeTopologies bounds only its size) and records the volume accessible from "{}",
// which topologyMatch finds in every node that has a topology: `volume status` says
// Schedulable "yes" and a claim is admitted and published on the zone-b node, outside the
// topology the spec required, with no warning at the create. `export nomad` of the volume
// fails ("the exported spec does not validate for register (a volctl bug): Missing topology
// segments"): it writes that topology as a required one without segments, which Nomad's
// register refuses too ("required topology is missing segments field"). Correct: an accessible topology with no segments says nothing of where
// the volume is; it is refused as a bad answer (the volume deleted again, as one outside the
// requisite topology is), or left out so that the volume's topology is the required list (zone
// a, the create warning that it is outside its topology); either way the volume is not
// schedulable on the zone-b node and its export is a spec Nomad and volctl accept.
// Found by helper review74.
func TestCreateAnsweredWithATopologyOfNoSegmentsIsNotAccessibleEverywhere(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "b"}}
	cfg.CreateTopology = &spec.Topology{Segments: map[string]string{}}
	mem := csitest.NewMemPlugin(cfg)
	_, e, eng := serveMem(t, mem)
	src := topologySpecRequesting("v", "  required {\n    topology {\n      segments {\n        zone = \"a\"\n      }\n    }\n  }\n")
	ios, _, _, errOut := iostreams.Test()
	o := &VolumeSubmitOptions{IO: ios, Engine: eng, Verb: spec.VerbCreate, Files: []string{"v.hcl"},
		ReadFile: specFiles(map[string]string{"v.hcl": src})}
	if err := volumeSubmitRun(t.Context(), o); err != nil {
		// Refused as a bad answer: nothing recorded is schedulable anywhere.
		if _, gerr := e.Volume(t.Context(), "v"); gerr == nil {
			t.Fatalf("create refused (%v) but volume v is recorded", err)
		}
		return
	}
	info, err := e.Volume(t.Context(), "v")
	if err != nil {
		t.Fatal(err)
	}
	if s := info.Schedulability(); s.OK() {
		t.Errorf("volume v, whose spec requires zone a, created with accessible topology %v while plugin %q's node is in zone b: Schedulable %q (a claim is admitted on this node); "+
			"want it outside its topology (stderr of the create: %q)", info.AccessibleTopology, "mem", s, errOut.String())
	}

	h := &cliHarness{ctx: t.Context(), e: e, mem: mem}
	var dir string
	if _, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"v"}; dir = o.OutDir }); err != nil {
		t.Fatalf("export nomad of volume v: %v\n%s\nwant a register spec Nomad and volctl accept (no required topology without segments)", err, stderr)
	}
	exported, err := os.ReadFile(filepath.Join(dir, "volume-v.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, diags := spec.ParseVolume("volume-v.hcl", exported, spec.VerbRegister); diags.HasErrors() {
		t.Errorf("the exported register spec of volume v is refused by volctl's own parser (as Nomad refuses a required topology without segments): %v\n%s", diags, exported)
	}
}

// A create spec whose topology_request lists, under preferred, a topology that is not one of
// its required ones: the CSI spec says a CO MUST NOT send that ("If requisite is specified, all
// topologies in preferred list MUST also be present in the list of requisite topologies").
// volctl parses the spec without a word and sends the CreateVolume: volctl's own hostpath
// plugin refuses it (InvalidArgument "preferred topology ... is not in the requisite list"),
// and a plugin that honours preferred first (as many do) makes the volume in zone b, which
// volctl then refuses and deletes, saying the plugin placed it outside the requisite topology:
// the user is told the plugin is at fault, and not that the spec's preferred block is what to
// fix. Correct: the spec is refused before anything is sent (exit 2), naming the preferred
// topology and that it must be one of the required ones.
// Found by helper review74.
func TestCreatePreferringATopologyOutsideItsRequiredIsRefusedBeforeThePlugin(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
	mem := csitest.NewMemPlugin(cfg)
	_, e, eng := serveMem(t, mem)
	src := topologySpecRequesting("v",
		"  required {\n    topology {\n      segments {\n        zone = \"a\"\n      }\n    }\n  }\n"+
			"  preferred {\n    topology {\n      segments {\n        zone = \"b\"\n      }\n    }\n  }\n")
	ios, _, _, errOut := iostreams.Test()
	o := &VolumeSubmitOptions{IO: ios, Engine: eng, Verb: spec.VerbCreate, Files: []string{"v.hcl"},
		ReadFile: specFiles(map[string]string{"v.hcl": src})}
	err := volumeSubmitRun(t.Context(), o)
	if n := mem.CallCount(csi.RPCCreateVolume); n != 0 {
		t.Errorf("CreateVolume sent %d time(s) for a spec whose preferred topology {zone=b} is not among its required ones (create: %v); want the spec refused before the plugin is asked", n, err)
	}
	// The diagnostic, on stderr as every invalid spec's is, names the preferred topology.
	if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(errOut.String(), `preferred topology {"zone"="b"} is not one of the required`) {
		t.Errorf("create: %v (exit %d); want exit %d, the diagnostic naming the preferred topology that is not required\nstderr: %s", err, ExitCode(err), ExitUsage, errOut)
	}
	if _, gerr := e.Volume(t.Context(), "v"); gerr == nil {
		t.Errorf("volume v recorded after a create of a spec volctl must not send")
	}
}
