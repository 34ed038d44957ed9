package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A volume the plugin makes accessible only from a topology its node is not in is created, and
// the create warns that no claim of it is admitted on this host, naming both topologies; the
// volume list says "no: outside its topology" of it and `volume status` why. Before, the create
// said nothing, the list said "yes", and the first claim was refused.
func TestVolumeOutsideItsPluginsTopologyIsNotSchedulable(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
	cfg.CreateTopology = &spec.Topology{Segments: map[string]string{"zone": "b"}}
	_, e, eng := serveMem(t, csitest.NewMemPlugin(cfg))
	ios, _, out, errOut := iostreams.Test()
	o := &VolumeSubmitOptions{IO: ios, Engine: eng, Verb: spec.VerbCreate, Files: []string{"b.hcl"},
		ReadFile: specFiles(map[string]string{"b.hcl": strings.ReplaceAll(createSpec, "%s", "b")})}
	if err := volumeSubmitRun(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), `Volume "b" created`) {
		t.Errorf("create: stdout %q, want it created", out.String())
	}
	if want := `Warning: volume "b": it is accessible only from topology {zone=b}, and plugin "mem"'s node "`; !strings.HasPrefix(errOut.String(), want) ||
		!strings.Contains(errOut.String(), `is in {zone=a}: no new claim of it is admitted on this host`) {
		t.Errorf("create: stderr %q, want a warning beginning %q and naming zone a", errOut.String(), want)
	}

	vols, err := e.Volumes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := writeVolumeTable(&table, vols); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^b +b +mem +no: outside its topology `).MatchString(table.String()) {
		t.Errorf("volume list:\n%s\nwant b not schedulable, outside its topology", table.String())
	}
	info, err := e.Volume(t.Context(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if got := unschedulableReason(info); !strings.HasPrefix(got, "it is accessible only from topology {zone=b}") ||
		!strings.Contains(got, "restart the plugin with a topology the volume is accessible from") || strings.Contains(got, "probes it") {
		t.Errorf("volume status b's Not Schedulable = %q, want both topologies and the way out", got)
	}
}
