package spec

import (
	"fmt"
	"strings"
	"testing"
)

// A group whose two volume blocks claim one volume: an alloc holds one claim of a volume, so
// the run claimed it for the first block and was refused it for the second ("alloc "web[0]"
// already holds a write claim ...; release it first", advice that frees nothing: the run made
// that claim, and undid it), at every run, the group left running with no claims. The spec is
// refused when read, naming both blocks and the volume, and saying what to write instead.
func TestGroupVolumeBlocksClaimingOneVolumeAreRefused(t *testing.T) {
	block := func(label, source string, extra string) string {
		return fmt.Sprintf("  volume %q {\n    type = \"csi\"\n    source = %q\n    access_mode = \"multi-node-multi-writer\"\n    attachment_mode = \"file-system\"\n%s  }\n", label, source, extra)
	}
	for _, tc := range []struct {
		name, count, blocks string
		want                []string
	}{
		{"one read-write, one read-only", "1", block("data", "db", "") + block("logs", "db", "    read_only = true\n"),
			[]string{`Volume blocks "data" and "logs" both claim volume "db"`, "one volume block", "volume_mount"}},
		{"both per_alloc", "2", block("data", "db", "    per_alloc = true\n") + block("logs", "db", "    per_alloc = true\n"),
			[]string{`Volume blocks "data" and "logs" both claim volume "db"`, "db[0]"}},
		{"per_alloc and one of its volumes", "3", block("data", "db", "    per_alloc = true\n") + block("spare", "db[2]", ""),
			[]string{`Volume block "spare" claims volume "db[2]", which per_alloc volume block "data" claims for alloc web[2]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "group \"web\" {\n  count = " + tc.count + "\n" + tc.blocks + "}\n"
			_, diags := NewParser().ParseGroup("web.hcl", []byte(src))
			if !diags.HasErrors() {
				t.Fatalf("a group whose volume blocks claim one volume was read without an error:\n%s", src)
			}
			for _, w := range append(tc.want, "Volume claimed twice") {
				if !strings.Contains(diags.Error(), w) {
					t.Errorf("error = %q; want it to say %q", diags.Error(), w)
				}
			}
		})
	}
	// Not one volume: a per_alloc block's volumes past the count, or a source that only looks
	// like one of them, and the same source per_alloc and not (db and db[0], db[1]).
	for _, blocks := range []string{
		block("data", "db", "    per_alloc = true\n") + block("spare", "db[2]", ""),
		block("data", "db", "    per_alloc = true\n") + block("spare", "db[01]", ""),
		block("data", "db", "    per_alloc = true\n") + block("whole", "db", ""),
	} {
		src := "group \"web\" {\n  count = 2\n" + blocks + "}\n"
		if _, diags := NewParser().ParseGroup("web.hcl", []byte(src)); diags.HasErrors() {
			t.Errorf("volume blocks claiming distinct volumes refused: %v\n%s", diags, src)
		}
	}
}
