package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

func runExportNomad(t *testing.T, h *cliHarness, mutate func(*ExportNomadOptions)) (stdout, stderr string, err error) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	opts := &ExportNomadOptions{IO: ios, Engine: h.engine, OutDir: filepath.Join(t.TempDir(), "out"),
		Job: nomad.JobOptions{Driver: "exec"}, Plugin: nomad.PluginJobOptions{NomadDataDir: "/opt/nomad/data"}}
	mutate(opts)
	err = exportNomadRun(context.Background(), opts)
	return out.String(), errOut.String(), err
}

func exportVolume(t *testing.T, h *cliHarness) engine.VolumeInfo {
	t.Helper()
	v, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		CapacityMin: 1 << 30,
		Capabilities: []spec.Capability{
			{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
			{AccessMode: spec.SingleNodeReaderOnly, AttachmentMode: spec.FileSystem}},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "password=hunter2"}},
		Secrets:      spec.Secrets{"token": "s3cr3t-value"},
		Parameters:   map[string]string{"tier": "gold"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Every exported volume file is a register spec volctl's own parser accepts for register and
// reads back as the volume: external ID, capabilities, mount options, parameters, the
// plugin's context, capacity. Secrets and mount flags are placeholders, and never printed.
func TestExportNomadVolumeRoundTrips(t *testing.T) {
	h := newCLIHarness(t)
	info := exportVolume(t, h)
	var dir string
	stdout, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; dir = o.OutDir })
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "volume-db.hcl")
	if !strings.Contains(stdout, path) {
		t.Errorf("stdout %q does not name %s", stdout, path)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{stdout, stderr, string(src)} {
		if strings.Contains(out, "s3cr3t-value") || strings.Contains(out, "hunter2") {
			t.Fatalf("a secret leaked without --include-secrets:\n%s", out)
		}
	}
	if !strings.Contains(stderr, `plugin "mem" (mem.csi.volctl.test) is not volctl's own: run it in Nomad with its own job`) {
		t.Errorf("stderr does not say the mem plugin needs its own Nomad job:\n%s", stderr)
	}
	if !strings.Contains(stderr, "1 secret(s) written as [REDACTED]") || !strings.Contains(stderr, "2 mount flag(s)") {
		t.Errorf("stderr does not say which values are placeholders:\n%s", stderr)
	}
	got := parseExported(t, path, src)
	want := nomad.RegisterSpec(info)
	want.Secrets = spec.Secrets{"token": filledIn}
	want.MountOptions = &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{filledIn, filledIn}}
	want.Capacity = 0 // the size, which a volume file has no place for: only the API carries it
	if info.ExternalID == "" || len(info.Context) == 0 {
		t.Fatalf("the test volume has no external ID or context: %+v", info)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("round trip:\n got %#v\nwant %#v\n%s", got.Secrets.Plain(), want.Secrets.Plain(), src)
		t.Errorf("got  %+v\nwant %+v", *got, want)
	}

	// With --include-secrets the values are in the file (0600), still not on stdout or stderr.
	stdout, stderr, err = runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes = []string{"db"}
		o.IncludeSecrets = true
		dir = o.OutDir
	})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "volume-db.hcl")
	src, _ = os.ReadFile(path)
	got, diags := spec.ParseVolume(path, src, spec.VerbRegister)
	if diags.HasErrors() || got.Secrets.Plain()["token"] != "s3cr3t-value" || got.MountOptions.MountFlags.Plain()[1] != "password=hunter2" {
		t.Fatalf("--include-secrets: %v\n%s", diags, src)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("--include-secrets file mode: %v %v, want 0600", st.Mode(), err)
	}
	if strings.Contains(stdout+stderr, "s3cr3t-value") || strings.Contains(stdout+stderr, "hunter2") {
		t.Fatalf("a secret reached stdout or stderr:\n%s%s", stdout, stderr)
	}
}

// A group becomes a job whose group keeps its volume blocks unchanged and has one task per
// volume_mount, with {index} as ${NOMAD_ALLOC_INDEX}; the volumes it uses are exported too.
func TestExportNomadGroupJob(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	for _, id := range []string{"data[0]", "data[1]"} {
		h.createVolume(t, id, spec.SingleNodeWriter)
	}
	h.createVolume(t, "logs", spec.MultiNodeMultiWriter)
	// The destinations are bind-mounted for real: under a directory of the test's own, whose
	// mounts go with it, not at /srv, where each run left its mounts on the host and the next
	// run's group (or another process's) found them there.
	root := hostpathtest.MountDir(t)
	g := spec.Group{Name: "web", Count: 2,
		Volumes: []spec.VolumeRequest{
			{Name: "data", Type: "csi", Source: "data", PerAlloc: true, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem,
				MountOptions: &spec.MountOptions{FSType: "ext4"}},
			{Name: "logs", Type: "csi", Source: "logs", ReadOnly: true, AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem},
		},
		Mounts: []spec.VolumeMount{
			{Volume: "data", Destination: root + "/srv/data/{index}", PropagationMode: spec.PropagationPrivate},
			{Volume: "logs", Destination: root + "/srv/logs/{alloc}", ReadOnly: true, PropagationMode: spec.PropagationHostToTask},
		}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	var dir string
	_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Groups = []string{"web"}
		o.Job.Command, o.Job.Args = "/bin/sh", []string{"-c", "sleep 3600"}
		dir = o.OutDir
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"volume-data[0].hcl", "volume-data[1].hcl", "volume-logs.hcl"} {
		src, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("the group's volume file: %v", err)
		}
		if _, diags := spec.ParseVolume(f, src, spec.VerbRegister); diags.HasErrors() {
			t.Errorf("%s: %s", f, diags.Error())
		}
	}
	src, err := os.ReadFile(filepath.Join(dir, "job-web.nomad.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	file, diags := hclsyntax.ParseConfig(src, "job-web.nomad.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("job is not HCL: %s", diags.Error())
	}
	body := file.Body.(*hclsyntax.Body)
	job := body.Blocks[0]
	if job.Type != "job" || job.Labels[0] != "web" {
		t.Fatalf("first block %s %v, want job \"web\"", job.Type, job.Labels)
	}
	group := job.Body.Blocks[0]
	// The group's volume blocks, with count, make a volctl group spec that reads back as the
	// group's requests (the mounts moved into tasks).
	out := hclwrite.NewEmptyFile()
	gb := out.Body().AppendNewBlock("group", []string{"web"}).Body()
	gb.SetAttributeRaw("count", hclwrite.TokensForIdentifier("2"))
	var tasks []*hclsyntax.Block
	for _, b := range group.Body.Blocks {
		switch b.Type {
		case "volume":
			vf, _ := hclwrite.ParseConfig(src[b.Range().Start.Byte:b.Range().End.Byte], "v", hcl.InitialPos)
			gb.AppendBlock(vf.Body().Blocks()[0])
		case "task":
			tasks = append(tasks, b)
		}
	}
	rg, diags := spec.NewParser().ParseGroup("group.hcl", out.Bytes())
	if diags.HasErrors() {
		t.Fatalf("volume blocks do not read back as a group: %s\n%s", diags.Error(), out.Bytes())
	}
	if !reflect.DeepEqual(rg.Volumes, g.Volumes) {
		t.Errorf("volume blocks changed:\n got %+v\nwant %+v", rg.Volumes, g.Volumes)
	}
	if len(tasks) != 2 {
		t.Fatalf("%d tasks, want one per volume_mount (2)", len(tasks))
	}
	for i, want := range []spec.VolumeMount{
		{Volume: "data", Destination: root + "/srv/data/${NOMAD_ALLOC_INDEX}", PropagationMode: "private"},
		{Volume: "logs", Destination: root + "/srv/logs/web[${NOMAD_ALLOC_INDEX}]", ReadOnly: true, PropagationMode: "host-to-task"},
	} {
		attrs, _ := tasks[i].Body.JustAttributes()
		if d, _ := attrs["driver"].Expr.Value(nil); d.AsString() != "exec" {
			t.Errorf("task %d driver %v", i, d)
		}
		var vm *hclsyntax.Block
		for _, b := range tasks[i].Body.Blocks {
			if b.Type == "volume_mount" {
				vm = b
			}
		}
		if vm == nil {
			t.Fatalf("task %d has no volume_mount", i)
		}
		a, _ := vm.Body.JustAttributes()
		str := func(n string) string { v, _ := a[n].Expr.Value(nil); return v.AsString() }
		ro, _ := a["read_only"].Expr.Value(nil)
		got := spec.VolumeMount{Volume: str("volume"), Destination: str("destination"), ReadOnly: ro.True(), PropagationMode: str("propagation_mode")}
		if got != want {
			t.Errorf("task %d volume_mount %+v, want %+v", i, got, want)
		}
	}
}

// Drivers that cannot mount CSI volumes into a task are refused before anything is written.
func TestExportNomadRefusesDriversWithoutMounts(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	for _, d := range []string{"raw_exec", "java", "mock"} {
		var dir string
		_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; o.Job.Driver = d; dir = o.OutDir })
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), d) {
			t.Errorf("--driver %s: %v (exit %d), want a usage error naming it", d, err, ExitCode(err))
		}
		if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
			t.Errorf("--driver %s wrote %s", d, dir)
		}
	}
}

// Volumes of volctl's own plugin bring its system job: volctl plugin serve hostpath as a
// csi_plugin monolith, without --socket, with the --node-id the volumes' topology names and, for
// raw_exec, stage_publish_base_dir under the clients' data dir.
func TestExportNomadPluginJob(t *testing.T) {
	h := newCLIHarness(t)
	root := t.TempDir()
	dir := exportHostpathVolume(t, h, hostpath.Config{}, &spec.Exec{Command: "volctl",
		Args: []string{"plugin", "serve", "hostpath", "--root", root, "--node-id", "edge-7", "--enable-attach"}},
		func(o *ExportNomadOptions) { o.Plugin.NomadDataDir = "/var/nomad" })
	vsrc, _ := os.ReadFile(filepath.Join(dir, "volume-hv.hcl"))
	v, diags := spec.ParseVolume("v", vsrc, spec.VerbRegister)
	if diags.HasErrors() || v.TopologyRequest == nil || v.TopologyRequest.Required[0].Segments[hostpath.TopologyKey] != "edge-7" {
		t.Fatalf("volume's topology_request.required should name node edge-7: %v\n%s", diags, vsrc)
	}
	src, err := os.ReadFile(filepath.Join(dir, "plugin-hp.nomad.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, want := range []string{
		`job "plugin-hp"`, `type        = "system"`, `driver = "raw_exec"`, `command = "/usr/local/bin/volctl"`,
		`args    = ["plugin", "serve", "hostpath", "--root", "` + root + `", "--node-id", "edge-7", "--enable-attach"]`,
		`id                     = "hp"`, `type                   = "monolith"`,
		`stage_publish_base_dir = "/var/nomad/client/csi/monolith/hp"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("plugin job lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "--socket") {
		t.Errorf("plugin job passes --socket; Nomad sets CSI_ENDPOINT:\n%s", s)
	}
	if _, diags := hclsyntax.ParseConfig(src, "p", hcl.InitialPos); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
}

// exportHostpathVolume registers volctl's hostpath plugin, as cfg serves it on node edge-7,
// as plugin "hp" (with exec, when not nil), creates volume "hv" through it, and exports the
// volume, mutate changing the options first; it returns the directory the files went to.
func exportHostpathVolume(t *testing.T, h *cliHarness, cfg hostpath.Config, exec *spec.Exec, mutate func(*ExportNomadOptions)) string {
	t.Helper()
	hostpathVolumeToExport(t, h, cfg, exec)
	var dir string
	if _, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes = []string{"hv"}
		o.Plugin.VolctlPath = "/usr/local/bin/volctl"
		mutate(o)
		dir = o.OutDir
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostpathVolumeToExport serves volctl's hostpath plugin with cfg (node edge-7), registers it
// as hp with exec, and creates volume hv on it.
func hostpathVolumeToExport(t *testing.T, h *cliHarness, cfg hostpath.Config, exec *spec.Exec) {
	t.Helper()
	cfg.NodeID, cfg.Mounter = "edge-7", &hostpathtest.FakeMounter{}
	srv := hostpathtest.Start(t, cfg)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: strings.TrimPrefix(srv.Endpoint, "unix://"), Exec: exec}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "hv", Name: "hv", Type: "csi", PluginID: "hp",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
}

// A Nomad job claims volumes of its own namespace only: a group whose volumes live in one
// namespace gets a job in it.
func TestExportNomadGroupJobNamespace(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "pv", Name: "pv", Namespace: "prod", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	g := spec.Group{Name: "app", Count: 1, Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "pv",
		AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	var dir string
	if _, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Groups = []string{"app"}; dir = o.OutDir }); err != nil {
		t.Fatal(err)
	}
	job, _ := os.ReadFile(filepath.Join(dir, "job-app.nomad.hcl"))
	vol, _ := os.ReadFile(filepath.Join(dir, "volume-pv.hcl"))
	if !strings.Contains(string(job), `namespace   = "prod"`) || !strings.Contains(string(vol), `namespace    = "prod"`) {
		t.Errorf("job and volume should both be in namespace prod:\n%s\n%s", job, vol)
	}
}

// A volume of the default namespace is exported without one, as the job that uses it is: `nomad
// volume register` then takes it into the namespace the request names (NOMAD_NAMESPACE's, else
// the default one), where `nomad job run` runs the job and `volctl nomad register` registers
// it. The file named the default namespace, which Nomad keeps whatever NOMAD_NAMESPACE says:
// with it set, the volume went to the default namespace and the job to NOMAD_NAMESPACE's,
// where it found no such volume.
func TestExportNomadDefaultNamespaceIsTheRequests(t *testing.T) {
	h := newCLIHarness(t)
	exportVolume(t, h)
	var dir string
	if _, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; dir = o.OutDir }); err != nil {
		t.Fatal(err)
	}
	vol, _ := os.ReadFile(filepath.Join(dir, "volume-db.hcl"))
	if strings.Contains(string(vol), "namespace") {
		t.Errorf("the volume file of a volume in the default namespace names one, which Nomad keeps whatever NOMAD_NAMESPACE says:\n%s", vol)
	}
	if got := parseExported(t, "volume-db.hcl", vol); got.Namespace != spec.DefaultNamespace {
		t.Fatalf("volctl reads the file back in namespace %q, want the default one", got.Namespace)
	}
}

// A volume with two keys in one map that differ only in Unicode normalisation is refused by
// export before any file is written, naming the volume, the map and both keys: the exported
// file writes keys in normal form C, which would make them one and lose a value. A plugin may
// return such keys in a volume's accessible topology, and an older volctl kept them apart from
// a spec's block-form map with bare keys (a spec refuses them now: the decomposed key is a name
// Nomad's HCL1 does not read, TestMapKeysEqualInNFC); such a volume is made here through the
// engine, as that volctl stored it. A group spec keeps two such volume block labels apart too.
func TestExportNomadRefusesKeysEqualInNFC(t *testing.T) {
	h := newCLIHarness(t)
	cfg := csitest.DefaultMemConfig()
	cfg.CreateTopology = &spec.Topology{Segments: map[string]string{"zone\u00e9": "a", "zonee\u0301": "b"}}
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, cfg)))
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "topo", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	v := spec.Volume{ID: "nfc", Name: "nfc", Type: "csi", PluginID: "mem", CapacityMin: 1 << 30,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Parameters:   map[string]string{"\u00e9": "precomposed", "e\u0301": "decomposed"}}
	if _, err := h.e.CreateVolume(h.ctx, v); err != nil {
		t.Fatal(err)
	}
	tv := spec.Volume{ID: "topo-vol", Name: "topo-vol", Type: "csi", PluginID: "topo", CapacityMin: 1 << 30,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	if _, err := h.e.CreateVolume(h.ctx, tv); err != nil {
		t.Fatal(err)
	}
	exportVolume(t, h) // "db", which alone exports
	for _, c := range []struct{ vol, what, keys string }{
		{"nfc", "parameters", `"e\u0301" and "\u00e9"`},
		{"topo-vol", "topology_request.required[0].segments", `"zonee\u0301" and "zone\u00e9"`},
	} {
		var dir string
		_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db", c.vol}; dir = o.OutDir })
		if err == nil {
			t.Fatalf("%s: exported", c.vol)
		}
		for _, want := range []string{`volume "` + c.vol + `"`, c.what, c.keys} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not hold %q", c.vol, err, want)
			}
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the output directory was made or written to: %v", c.vol, err)
		}
	}

	// A group's volume blocks are a map by name in the job: two names that clash so are refused.
	for _, id := range []string{"shared-a", "shared-b"} {
		h.createVolume(t, id, spec.MultiNodeMultiWriter)
	}
	req := func(name, source string) spec.VolumeRequest {
		return spec.VolumeRequest{Name: name, Type: "csi", Source: source, AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	}
	root := hostpathtest.MountDir(t) // the binds' destinations, unmounted with it (not at /a, /b on the host)
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{req("\u00e9", "shared-a"), req("e\u0301", "shared-b")},
		Mounts: []spec.VolumeMount{{Volume: "\u00e9", Destination: root + "/a", PropagationMode: spec.PropagationPrivate},
			{Volume: "e\u0301", Destination: root + "/b", PropagationMode: spec.PropagationPrivate}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	var dir string
	_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Groups = []string{"web"}; dir = o.OutDir })
	if err == nil || !strings.Contains(err.Error(), `group "web": volume blocks "e\u0301" and "\u00e9"`) {
		t.Errorf("group: %v, want the group's volume blocks refused", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("group: the output directory was made or written to: %v", err)
	}
}

// A plugin that echoed a secret into its context's keys, in two forms, would have them written
// as one key once the secret is a placeholder (without --include-secrets): export refuses, as
// it refuses any map whose keys the file would merge; with --include-secrets both are written.
func TestExportNomadRefusesContextKeysMergedByRedaction(t *testing.T) {
	const secret = "ctxkey-s3cret-5d1e"
	echoKeys := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			v := req.(*csipb.CreateVolumeRequest).GetSecrets()["token"]
			r.Volume.VolumeContext = map[string]string{"k-" + v: "1", "k-" + hex.EncodeToString([]byte(v)): "2", "plain": "3"}
		}
		return resp, err
	}
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())), csitest.WithInterceptor(echoKeys))
	h := &cliHarness{ctx: context.Background(), state: filepath.Join(t.TempDir(), "state")}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", Secrets: spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	var dir string
	stdout, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; dir = o.OutDir })
	if err == nil || !strings.Contains(err.Error(), `volume "db": keys of its context hold a secret value`) {
		t.Errorf("export = %v, want the context's merged keys refused", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the output directory was made or written to: %v", err)
	}
	if strings.Contains(stdout+stderr+fmt.Sprint(err), secret) {
		t.Errorf("the secret was printed: %s%s%v", stdout, stderr, err)
	}
	if _, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"}; o.IncludeSecrets = true; dir = o.OutDir }); err != nil {
		t.Fatalf("with --include-secrets: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "volume-db.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if got, diags := spec.ParseVolume("volume-db.hcl", src, spec.VerbRegister); diags.HasErrors() || len(got.Context) != 3 {
		t.Errorf("with --include-secrets: context %v, %v, want its three keys\n%s", got, diags, src)
	}
}

// What is at the destination already is replaced, never written through: a symlink there (to
// a file another user can read, say) is replaced by the file, the file it points to left as
// it was, and a file there that was 0644 becomes the 0600 one --include-secrets writes.
func TestExportNomadReplacesWhatIsAtTheDestination(t *testing.T) {
	h := newCLIHarness(t)
	exportVolume(t, h)
	dir := filepath.Join(t.TempDir(), "out")
	victim := filepath.Join(t.TempDir(), "readable-by-all")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "volume-db.hcl")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes, o.OutDir, o.IncludeSecrets = []string{"db"}, dir, true
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "theirs\n" {
		t.Errorf("export wrote through the symlink at the destination: %q", b)
	}
	st, err := os.Lstat(filepath.Join(dir, "volume-db.hcl"))
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Errorf("destination after export: %v %v, want a regular file, 0600", st.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestExportNomadPluginJobRefusesANodeIDServeRefuses: the plugin job's --node-id, from the flag
// or from the node its volumes' topology names, was written unchecked: a node ID holding a bidi
// override or an escape sequence (a plugin started before `plugin serve hostpath` checked it)
// made a job whose plugin refuses to start, Nomad restarting it for ever. It is refused, naming
// --node-id with the value escaped, before anything is written.
func TestExportNomadPluginJobRefusesANodeIDServeRefuses(t *testing.T) {
	const bad = "edge\u202e7"
	h := newCLIHarness(t)
	srv := hostpathtest.Start(t, hostpath.Config{NodeID: bad, Mounter: &hostpathtest.FakeMounter{}})
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: strings.TrimPrefix(srv.Endpoint, "unix://"),
		Exec: &spec.Exec{Command: "volctl", Args: []string{"plugin", "serve", "hostpath", "--root", t.TempDir(), "--node-id", bad}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "hv", Name: "hv", Type: "csi", PluginID: "hp",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, flag, want string
		code             int
	}{
		{"from the topology", "", `(or the plugin reports): --node-id "edge\u202e7" must not contain U+202E (its character 5)`, ExitError},
		{"from the flag", "n1\x1b]0;pwned\a", `export nomad: --node-id "n1\x1b]0;pwned\a" must not contain the control character U+001B (its character 3)`, ExitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var dir string
			_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
				o.Volumes = []string{"hv"}
				o.Plugin.VolctlPath = "/usr/local/bin/volctl"
				o.Plugin.NodeID = tt.flag
				dir = o.OutDir
			})
			if err == nil || strings.Contains(err.Error(), "\u202e") || strings.Contains(err.Error(), "\x1b") {
				t.Errorf("err = %q, want it refused with the node ID escaped", err)
			}
			expectErr(t, err, tt.want, tt.code)
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("refused, yet %s was made: %v", dir, err)
			}
		})
	}
}

// A volume from a spec Nomad and volctl both take, with a parameter key "true" (quoted, as
// a key must be in a volume spec), is exported: the file quotes the key, which HCL1 scans as a
// bool written bare, and reads back. Written bare, the export refused itself ("the exported
// spec does not validate for register (a volctl bug)").
func TestExportNomadBoolWordKeys(t *testing.T) {
	h := newCLIHarness(t)
	src := "id = \"b\"\nname = \"b\"\ntype = \"csi\"\nplugin_id = \"mem\"\ncapacity_min = \"1GiB\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
		"parameters {\n  \"true\" = \"x\"\n  \"false\" = \"y\"\n}\n"
	v, diags := spec.ParseVolume("b.hcl", []byte(src), spec.VerbCreate)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if _, err := h.e.CreateVolume(h.ctx, *v); err != nil {
		t.Fatal(err)
	}
	var dir string
	if _, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"b"}; dir = o.OutDir }); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	out, err := os.ReadFile(filepath.Join(dir, "volume-b.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	got, diags := spec.ParseVolume("volume-b.hcl", out, spec.VerbRegister)
	if diags.HasErrors() || got.Parameters["true"] != "x" || got.Parameters["false"] != "y" {
		t.Errorf("read back as %v %v\n%s", diags, got, out)
	}
}

// filledIn is what parseExported writes where a file holds a placeholder.
const filledIn = "filled-in-value"

// parseExported reads back a volume file export nomad wrote without --include-secrets: its
// only errors are its placeholders' (spec.PlaceholderSummary), one for each, which volctl
// refuses to read as values; with each filled in (filledIn), as the file's comment asks, it
// reads back whole.
func parseExported(t *testing.T, name string, src []byte) *spec.Volume {
	t.Helper()
	_, diags := spec.ParseVolume(name, src, spec.VerbRegister)
	if rest := exportErrors(diags, true, nil); rest.HasErrors() {
		t.Fatalf("exported file does not validate for register: %s\n%s", rest.Error(), src)
	}
	// One diagnostic for each placeholder: an error for a secret or mount flag, a warning for
	// a context value (the plugin's, which may be the placeholder itself).
	n := 0
	for _, d := range diags {
		if d.Summary == spec.PlaceholderSummary {
			n++
		}
	}
	if want := strings.Count(string(src), `"`+spec.Redacted+`"`); n != want {
		t.Fatalf("exported file read back with %d placeholder error(s) for %d placeholder(s): %s\n%s", n, want, diags.Error(), src)
	}
	got, diags := spec.ParseVolume(name, []byte(strings.ReplaceAll(string(src), `"`+spec.Redacted+`"`, `"`+filledIn+`"`)), spec.VerbRegister)
	if diags.HasErrors() {
		t.Fatalf("exported file, its placeholders filled in, does not validate for register: %s\n%s", diags.Error(), src)
	}
	return got
}

// A file exported before and edited since (a group's job, whose task the user writes in) was
// replaced by the next export without a word, the edits lost. One that differs from what is
// written is kept as FILE.bak, which the line naming the file says; one that is what is
// written now, or a first export, keeps nothing.
func TestExportNomadKeepsAFileEditedSinceAnEarlierExport(t *testing.T) {
	h := newCLIHarness(t)
	exportVolume(t, h)
	dir := filepath.Join(t.TempDir(), "out")
	export := exportDBTo(t, h, dir)
	file := filepath.Join(dir, "volume-db.hcl")
	for range 2 { // a first export, then the same again
		if out := export(); strings.Contains(out, ".bak") {
			t.Errorf("export said it kept a file: %q", out)
		}
		if _, err := os.Lstat(file + ".bak"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a .bak made of a file that was what is written: %v", err)
		}
	}
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	edited := append(append([]byte{}, exported...), "# my edit\n"...)
	if err := os.WriteFile(file, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := export(); !strings.Contains(out, "the file there differed from this export (edited since?) and is kept as "+file+".bak") {
		t.Errorf("export over an edited file said %q; want it to name the file kept", out)
	}
	if b, _ := os.ReadFile(file + ".bak"); string(b) != string(edited) {
		t.Errorf("kept file = %q; want the edited one", b)
	}
	if b, _ := os.ReadFile(file); string(b) != string(exported) {
		t.Errorf("exported file = %q; want the export", b)
	}
}

// An export whose write fails after it kept the edited file aside puts that file back, and
// says so: the destination was left empty, the edits in FILE.bak alone.
func TestExportNomadWriteFailingPutsTheEditedFileBack(t *testing.T) {
	h := newCLIHarness(t)
	exportVolume(t, h)
	dir := filepath.Join(t.TempDir(), "out")
	export := func() error {
		_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes, o.OutDir = []string{"db"}, dir })
		return err
	}
	if err := export(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "volume-db.hcl")
	if err := os.WriteFile(file, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	orig := writeExported
	t.Cleanup(func() { writeExported = orig })
	writeExported = func(string, []byte, fs.FileMode) error { return errors.New("no space left on device") }
	if err := export(); err == nil || !strings.Contains(err.Error(), "the file that was there is left as it was") {
		t.Fatalf("export whose write fails = %v; want it to say the file there is left as it was", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "# mine\n" {
		t.Errorf("the destination after the failed export = %q, %v; want the edited file back", b, err)
	}
	if _, err := os.Lstat(file + ".bak"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a .bak left after the file was put back: %v", err)
	}
}

// exportDBTo returns an export of volume db to dir, failing the test if it fails: its stdout.
func exportDBTo(t *testing.T, h *cliHarness, dir string) func() string {
	return func() string {
		t.Helper()
		stdout, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes, o.OutDir = []string{"db"}, dir })
		if err != nil {
			t.Fatal(err)
		}
		return stdout
	}
}
