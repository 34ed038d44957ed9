package nomad

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/volctl/volctl/internal/spec"
)

// blockLabels parses an exported job file as `nomad job run` does (HCL2) and returns the first
// label of each block of type typ, at any depth, in order.
func blockLabels(t *testing.T, b []byte, typ string) []string {
	t.Helper()
	f, diags := hclsyntax.ParseConfig(b, "job.nomad.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("the exported job does not parse: %s\n%s", diags.Error(), b)
	}
	var out []string
	var walk func(*hclsyntax.Body)
	walk = func(body *hclsyntax.Body) {
		for _, blk := range body.Blocks {
			if blk.Type == typ && len(blk.Labels) > 0 {
				out = append(out, blk.Labels[0])
			}
			walk(blk.Body)
		}
	}
	walk(f.Body.(*hclsyntax.Body))
	return out
}

// A group or a plugin volctl takes by a name with a space ("my web": spec.ValidateNewID takes
// U+0020) is exported as a job whose ID has dashes for its spaces and whose name is the name,
// with a note for the group: Nomad refuses a job ID with a space ("Job ID contains a space").
// Before, the file held `job "my web"`, and `nomad job run` refused it.
func TestJobIDsAreIDsNomadTakes(t *testing.T) {
	g := spec.Group{Name: "my web", Count: 1, Volumes: []spec.VolumeRequest{{Name: "data", Source: "db"}},
		Mounts: []spec.VolumeMount{{Volume: "data", Destination: "/srv"}}}
	b, notes, err := GroupJob(g, JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := blockLabels(t, b, "job"); !slices.Equal(got, []string{"my-web"}) {
		t.Errorf("group job IDs %q, want [my-web]:\n%s", got, b)
	}
	if !strings.Contains(string(b), `name        = "my web"`) {
		t.Errorf("group job does not keep the group's name as its name:\n%s", b)
	}
	if got := blockLabels(t, b, "group"); !slices.Equal(got, []string{"my web"}) {
		t.Errorf("task group names %q, want the group's own, which Nomad takes:\n%s", got, b)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `"my-web"`) || !strings.Contains(notes[0], `"my web"`) {
		t.Errorf("notes %q, want one naming the group and the job ID it is written as", notes)
	}

	b, err = PluginJob(PluginJobOptions{PluginID: "host path", VolctlPath: "/usr/local/bin/volctl", Root: "/srv/volumes",
		NodeID: "node1", NomadDataDir: "/opt/nomad/data"})
	if err != nil {
		t.Fatal(err)
	}
	if got := blockLabels(t, b, "job"); !slices.Equal(got, []string{"plugin-host-path"}) {
		t.Errorf("plugin job IDs %q, want [plugin-host-path]:\n%s", got, b)
	}
	if !strings.Contains(string(b), `id                     = "host path"`) {
		t.Errorf("the plugin job's csi_plugin should keep the plugin's ID, which Nomad takes:\n%s", b)
	}

	// A name without a space is written as it was, with no name attribute.
	b, notes, err = GroupJob(spec.Group{Name: "web", Count: 1}, JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := blockLabels(t, b, "job"); !slices.Equal(got, []string{"web"}) || strings.Contains(string(b), "name ") || len(notes) != 0 {
		t.Errorf("job IDs %q, notes %q, want [web] and none:\n%s", got, notes, b)
	}
}

// A task is named after the volume it mounts as Nomad takes a task's name: slashes made dashes
// (Nomad refuses "/" and "\" in one: "Task name cannot include slashes"), and Nomad's reserved
// "alloc" numbered, each name still unique. Before, a volume block "data\1", which volctl takes,
// was written as task "data\1", and one named "alloc" as task "alloc": Nomad refused both jobs.
func TestGroupJobTaskNamesAreNamesNomadTakes(t *testing.T) {
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: `data\1`, Source: "x"}, {Name: "data-1", Source: "y"}, {Name: "alloc", Source: "z"}, {Name: "alloc-2", Source: "w"}},
		Mounts: []spec.VolumeMount{{Volume: `data\1`, Destination: "/a"}, {Volume: "data-1", Destination: "/b"},
			{Volume: "alloc", Destination: "/c"}, {Volume: "alloc-2", Destination: "/d"}, {Volume: `data\1`, Destination: "/e"}}}
	b, _, err := GroupJob(g, JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tasks := blockLabels(t, b, "task")
	want := []string{"data-1", "data-1-2", "alloc-3", "alloc-2", "data-1-3"}
	if !slices.Equal(tasks, want) {
		t.Errorf("task names %q, want %q:\n%s", tasks, want, b)
	}
	for _, name := range tasks {
		if strings.ContainsAny(name, `/\`) || name == "alloc" {
			t.Errorf("task %q is a name Nomad refuses:\n%s", name, b)
		}
	}
	// Each task still mounts its own volume.
	if vols := blockLabels(t, b, "volume"); !slices.Equal(vols, []string{`data\1`, "data-1", "alloc", "alloc-2"}) {
		t.Errorf("volume blocks %q changed:\n%s", vols, b)
	}
}
