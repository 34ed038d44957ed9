package nomad

import (
	"regexp"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A group's job names a task after the volume it mounts, numbering a volume's second and later
// mounts; a number that makes another volume's name (a volume "a" mounted twice beside a
// volume "a-2") is skipped: Nomad refuses a group with two tasks of one name.
func TestGroupJobTaskNamesAreUnique(t *testing.T) {
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "a", Source: "x"}, {Name: "a-2", Source: "y"}},
		Mounts: []spec.VolumeMount{{Volume: "a", Destination: "/a1"}, {Volume: "a", Destination: "/a2"},
			{Volume: "a-2", Destination: "/b"}, {Volume: "a", Destination: "/a3"}}}
	b, _, err := GroupJob(g, JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*task "([^"]*)"`).FindAllStringSubmatch(string(b), -1) {
		if seen[m[1]] {
			t.Errorf("two tasks named %q in\n%s", m[1], b)
		}
		seen[m[1]] = true
	}
	if len(seen) != len(g.Mounts) {
		t.Errorf("%d distinct task names %v, want one per volume_mount (%d)", len(seen), seen, len(g.Mounts))
	}
}
