package nomad

import (
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// Two volume blocks volctl takes as two (their names differ in NFC: `data\é` and "data-é"
// written decomposed) mount as two tasks of two names in Nomad. taskName makes the first
// "data-é"; the second is "data-e\u0301", and the writer writes every label in NFC. Before,
// the names were compared as written, so neither was numbered, and the file held task
// "data-é" twice, which `nomad job run` refuses. Found by helper review60.
func TestTaskNamesStayUniqueAsTheFileWritesThem(t *testing.T) {
	src := "group \"web\" {\n" +
		"  volume \"data\\\\\u00e9\" {\n    type = \"csi\"\n    source = \"x\"\n    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n" +
		"  volume \"data-e\u0301\" {\n    type = \"csi\"\n    source = \"y\"\n    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n" +
		"  volume_mount {\n    volume = \"data\\\\\u00e9\"\n    destination = \"/a\"\n  }\n" +
		"  volume_mount {\n    volume = \"data-e\u0301\"\n    destination = \"/b\"\n  }\n" +
		"}\n"
	g, diags := spec.NewParser().ParseGroup("web.hcl", []byte(src))
	if diags.HasErrors() || g == nil {
		t.Fatalf("volctl refuses the group: %s", diags.Error())
	}
	if len(g.Volumes) != 2 || len(g.Mounts) != 2 {
		t.Fatalf("volctl reads %d volume blocks and %d mounts, want 2 and 2", len(g.Volumes), len(g.Mounts))
	}
	b, _, err := GroupJob(*g, JobOptions{})
	if err != nil {
		t.Fatalf("GroupJob: %v", err)
	}
	tasks := blockLabels(t, b, "task")
	sorted := slices.Clone(tasks)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(tasks) {
		t.Errorf("task names %+q: two tasks of one name in the group, which Nomad refuses:\n%s", tasks, b)
	}
}
