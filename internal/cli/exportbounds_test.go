package cli

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A volume whose plugin answered CreateVolume with a volume_context past the CSI spec's 4 KiB
// (and within the 16 KiB volctl takes from a plugin) is exported as a register spec volctl's
// own parser takes back: the context is the plugin's, copied into the spec, and register takes
// what create took from the plugin. Before, the export failed on its own check ("the exported
// spec does not validate for register (a volctl bug)"), and such a volume could not be moved.
func TestExportNomadVolumeWithTheLargestContextAPluginGives(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.CreateContext = map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		cfg.CreateContext["cert-"+k] = strings.Repeat(k, 2<<10) // 10 KiB in all
	}
	src := exportCreated(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	got, diags := spec.ParseVolume("volume-db.hcl", src, spec.VerbRegister)
	if diags.HasErrors() || got.Context["cert-e"] != cfg.CreateContext["cert-e"] || len(got.Context) != 6 {
		t.Fatalf("the exported spec read back: %d context keys, %v", len(got.Context), diags)
	}
}

// The same for a volume its plugin answered accessible from a topology the CSI spec's rules on
// a segment do not allow (a key with an upper-case prefix, a value of 100 bytes, one with a
// space and a slash), within what volctl takes from a plugin (512 bytes a key or value): the
// export writes it as topology_request.required, which register reads as the volume's
// accessible topology, the plugin's, and takes with a warning. Before, the export failed on
// its own check ("Invalid topology segment", "(a volctl bug)").
func TestExportNomadVolumeWithAPluginsOwnTopology(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	segments := map[string]string{"Topology.Example.COM/zone": strings.Repeat("z", 100), "rack": "r 1/2"}
	cfg.CreateTopology = &spec.Topology{Segments: segments}
	src := exportCreated(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	got, diags := spec.ParseVolume("volume-db.hcl", src, spec.VerbRegister)
	if diags.HasErrors() || got.TopologyRequest == nil || len(got.TopologyRequest.Required) != 1 ||
		!maps.Equal(got.TopologyRequest.Required[0].Segments, segments) {
		t.Fatalf("the exported spec read back: %+v, %v", got.TopologyRequest, diags)
	}
}

// A volume whose plugin answered at every bound volctl takes a plugin's answer to (an ID of
// 4 KiB, a context of 16 KiB, four topologies of 16 KiB each, segments of 512 bytes, none of
// them within the CSI spec's) is exported as a register spec volctl's own parser takes back
// whole: what volctl records of a plugin, it can write and read again.
func TestExportNomadVolumeAtEveryBoundAPluginIsHeldTo(t *testing.T) {
	pad := func(prefix string, n int) string { return prefix + strings.Repeat("x", n-len(prefix)) }
	id := pad("vol-", csi.MaxObjectID)
	vctx := map[string]string{}
	for i := range 16 {
		vctx[pad(fmt.Sprintf("k%02d-", i), 24)] = strings.Repeat("v", 1000)
	}
	var topologies []*csipb.Topology
	for i := range 4 {
		segs := map[string]string{}
		for j := range 16 {
			segs[pad(fmt.Sprintf("topology.example.com/t%d-s%02d-", i, j), spec.MaxPluginString)] = pad("zone-", spec.MaxPluginString)
		}
		topologies = append(topologies, &csipb.Topology{Segments: segs})
	}
	answer := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			r.Volume.VolumeId, r.Volume.VolumeContext, r.Volume.AccessibleTopology = id, vctx, topologies
		}
		return resp, err
	}
	src := exportCreated(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())), csitest.WithInterceptor(answer))
	got, diags := spec.ParseVolume("volume-db.hcl", src, spec.VerbRegister)
	if diags.HasErrors() || got.ExternalID != id || !maps.Equal(got.Context, vctx) || got.TopologyRequest == nil || len(got.TopologyRequest.Required) != 4 {
		t.Fatalf("the exported spec read back: %.600v", diags)
	}
	for i, tp := range got.TopologyRequest.Required {
		if !slices.ContainsFunc(topologies, func(w *csipb.Topology) bool { return maps.Equal(w.Segments, tp.Segments) }) {
			t.Errorf("topology %d read back is not one the plugin answered", i)
		}
	}
}

// exportCreated creates volume "db" through a mem plugin served with opts and returns the spec
// `volctl export nomad` writes of it.
func exportCreated(t *testing.T, opts ...csitest.ServeOption) []byte {
	t.Helper()
	socket, _ := csitest.Serve(t, opts...)
	h := &cliHarness{ctx: context.Background(), state: filepath.Join(t.TempDir(), "state")}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatalf("create: %v", err)
	}
	var dir string
	if _, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; dir = o.OutDir }); err != nil {
		t.Fatalf("export: %.600v", err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "volume-db.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// A volume an older volctl created in namespace team_a, which Nomad can hold no volume in:
// export nomad failed on its own check of the file it wrote, calling it "a volctl bug". It is
// refused before any file is written, naming the volume and its namespace, saying Nomad can
// hold no volume there, and the way to move it that keeps its data.
func TestExportNomadOfAVolumeInANamespaceNomadCannotHave(t *testing.T) {
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	h := &cliHarness{ctx: context.Background(), state: filepath.Join(t.TempDir(), "state")}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Namespace: "team_a", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatalf("create: %v", err)
	}
	var dir string
	_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; dir = o.OutDir })
	saysAll(t, "export nomad", err, `volume "db" is in namespace "team_a"`, "Nomad can hold no volume in it", "`volctl volume deregister --yes db`", "external_id")
	if err != nil && strings.Contains(err.Error(), "volctl bug") {
		t.Errorf("export nomad: %v\nwant it not to call a namespace an older volctl took a volctl bug", err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Errorf("export nomad refused, yet wrote %v", files)
	}
}
