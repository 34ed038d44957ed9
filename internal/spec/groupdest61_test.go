package spec

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// groupWithMounts61 is group "web" of count with volumes a and b mounted at destA and destB.
func groupWithMounts61(count, destA, destB string) []byte {
	vol := func(name string) string {
		return "  volume \"" + name + "\" {\n    type = \"csi\"\n    source = \"v" + name + "\"\n    access_mode = \"multi-node-multi-writer\"\n    attachment_mode = \"file-system\"\n  }\n"
	}
	mount := func(name, dest string) string {
		return "  volume_mount {\n    volume = \"" + name + "\"\n    destination = \"" + dest + "\"\n  }\n"
	}
	return []byte("group \"web\" {\n  count = " + count + "\n" + vol("a") + vol("b") + mount("a", destA) + mount("b", destB) + "}\n")
}

// Two volume_mounts whose destinations are one path for some alloc, once each alloc's index
// and name are put in, are refused, naming the first such alloc and the path, as one
// destination written twice is. Before, they were compared as written: validate said valid,
// and every `group run` refused each alloc so bound (exit 4), advising {index} or {alloc} in
// the destination, which it had. Found by helper review61.
func TestVolumeMountsOnePathForAnAllocAreRefused(t *testing.T) {
	for _, c := range []struct {
		count, a, b string
		want        string // "" for valid
	}{
		{"2", "/srv/{alloc}", "/srv/web[{index}]", `one path for every alloc (for alloc web[0]: /srv/web[0])`},
		{"2", "/srv/{index}1", "/srv/1{index}", `one path for alloc web[1]: /srv/11`},
		{"12", "/d/{index}{index}", "/d/1{index}1", `one path for alloc web[11]: /d/1111`},
		{"8", "/x/{index}", "/x/7", `one path for alloc web[7]: /x/7`},
		{"3", "/srv/{index}/x", "/srv/{index}/x/", `Another volume_mount already mounts at "/srv/{index}/x"`},
		{"11", "/d/{index}{index}", "/d/1{index}1", ""},
		{"7", "/x/{index}", "/x/7", ""},
		{"2", "/srv/{index}1", "/srv/2{index}", ""},
		{"100", "/srv/a{index}", "/srv/{index}a", ""},
		{"100", "/srv/{index}", "/srv/{index}0", ""},
	} {
		_, diags := NewParser().ParseGroup("g.hcl", groupWithMounts61(c.count, c.a, c.b))
		var dups []*hcl.Diagnostic
		for _, d := range diags {
			if d.Summary == "Duplicate destination" {
				dups = append(dups, d)
			}
		}
		switch {
		case c.want == "" && len(dups) > 0:
			t.Errorf("count %s, %q and %q: %v; they are no one path for any alloc", c.count, c.a, c.b, dups)
		case c.want != "" && (len(dups) != 1 || !strings.Contains(dups[0].Detail, c.want)):
			t.Errorf("count %s, %q and %q: %v; want one Duplicate destination saying %s", c.count, c.a, c.b, diags, c.want)
		}
	}
}

// sharedAlloc, which reasons on the index's digits, agrees with putting in every index below
// the count, for destinations made of text, slashes, dots and both placeholders.
func TestSharedAllocAgreesWithEveryIndex(t *testing.T) {
	parts := []string{"{index}", "{alloc}", "1", "0", "2", "/", "w", "e", "b", "[", "]", "..", "."}
	r := rand.New(rand.NewPCG(61, 61))
	digits := []string{"{index}", "{index}", "1", "11", "0", "2", "{alloc}", "web[", "]"}
	dest := func(parts []string) string {
		var b strings.Builder
		b.WriteString("/")
		for range 1 + r.IntN(5) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		return b.String()
	}
	shared := 0
	for n := range 40000 {
		from := parts
		if n%2 == 1 { // mostly digits and indexes: more pairs one path for some alloc
			from = digits
		}
		a, b, count := dest(from), dest(from), 1+r.IntN(130)
		want := -1
		for i := range count {
			if boundFor(a, "web", i) == boundFor(b, "web", i) {
				want = i
				break
			}
		}
		if want > 0 {
			shared++
		}
		if got := sharedAlloc(a, b, "web", count); got != want {
			t.Fatalf("sharedAlloc(%q, %q, count %d) = %d; putting in each index finds %d", a, b, count, got, want)
		}
	}
	if shared < 100 {
		t.Errorf("only %d of the pairs are one path for an alloc past web[0]: the cases do not reach what is tested", shared)
	}
	t.Logf("%d pairs one path for an alloc past web[0]", shared)
}
