package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// posOf returns the 1-based line and column of the first occurrence of sub in src (ASCII).
func posOf(t *testing.T, src, sub string) (line, col int) {
	t.Helper()
	i := strings.Index(src, sub)
	if i < 0 {
		t.Fatalf("%q not in source", sub)
	}
	line = 1 + strings.Count(src[:i], "\n")
	col = i - strings.LastIndex(src[:i], "\n")
	return line, col
}

// dbEBS is the start of the volume specs below: the lines every one of them needs.
const dbEBS = "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\n"

// TestHCL1Positions checks that diagnostics from a rewritten HCL1 file point at the line and
// column the user wrote, start and end.
func TestHCL1Positions(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		summary string
		at      string // the text the diagnostic must cover exactly
		after   string // where to start looking for at, if it occurs earlier
	}{
		{
			name: "access mode after a one-line nested block",
			src: dbEBS + `topology_request {
  required {
    topology { segments { rack = "R1" } }
  }
}
capability {
  access_mode     = "single-node-writter"
  attachment_mode = "file-system"
}
`,
			summary: "Invalid access mode",
			at:      `"single-node-writter"`,
		},
		{
			name: "value inside a rewritten segments map",
			src: dbEBS + `capability { access_mode = "single-node-writer", attachment_mode = "file-system" }
topology_request {
  required {
    topology { segments { "rack" = "R1", "zone" = "us east" } }
  }
}
`,
			summary: "Invalid topology segment",
			at:      `"us east"`,
		},
		{
			name: "second item of a comma-separated one-line block",
			src: dbEBS + `capability { access_mode = "single-node-writer", attachment_mode = "fs" }
topology_request { required { topology { segments { rack = "R1" } } } }
`,
			summary: "Invalid attachment mode",
			at:      `"fs"`,
		},
		{
			name: "dotted map key quoted by the rewrite",
			src: dbEBS + `capability { access_mode = "single-node-writer", attachment_mode = "file-system" }
topology_request { required { topology { segments { rack.x- = "R1" } } } }
`,
			summary: "Invalid topology segment",
			at:      `rack.x-`,
		},
		{
			name: "quoted argument name unquoted by the rewrite",
			src: `"id" = "../db"
type = "csi"
plugin_id = "ebs"
capability { access_mode = "single-node-writer", attachment_mode = "file-system" }
`,
			summary: "Invalid volume ID",
			at:      `"../db"`,
		},
		{
			name: "syntax error in a rewritten file",
			src: dbEBS + `capability { access_mode = "single-node-writer", attachment_mode = "file-system" }
topology_request { required { topology { segments { rack = "R1" } } } }
capability {
  access_mode = = "x"
}
`,
			summary: "Invalid expression",
			at:      `=`,
			after:   "access_mode = ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, diags := hclParse([]byte(tt.src)); !diags.HasErrors() {
				t.Fatal("the test source must need the HCL1 rewrite")
			}
			_, diags := ParseVolume("t.hcl", []byte(tt.src), VerbAny)
			var found *hcl.Diagnostic
			for _, d := range diags {
				if d.Summary == tt.summary {
					found = d
					break
				}
			}
			if found == nil {
				t.Fatalf("no %q diagnostic in %v", tt.summary, diags)
			}
			line, col := posOf(t, tt.src, tt.after+tt.at)
			col += len(tt.after)
			r := found.Subject
			if r.Start.Line != line || r.Start.Column != col {
				t.Errorf("starts at %d:%d, want %d:%d", r.Start.Line, r.Start.Column, line, col)
			}
			if r.End.Line != line || r.End.Column != col+len(tt.at) {
				t.Errorf("ends at %d:%d, want %d:%d", r.End.Line, r.End.Column, line, col+len(tt.at))
			}
			if got := tt.src[r.Start.Byte:r.End.Byte]; got != tt.at {
				t.Errorf("covers %q, want %q", got, tt.at)
			}
		})
	}
}

// TestRewriteOffsetMap checks, for the HCL1 files of the Nomad corpus, that every copied byte
// of the rewritten source maps back to the same byte of the original, and that the rewritten
// source parses as HCL2.
func TestRewriteOffsetMap(t *testing.T) {
	dir := nomadCorpus(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.hcl"))
	hcl1 := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, diags := hclParse(src); !diags.HasErrors() {
			continue
		}
		hcl1++
		rw, m, ok := rewriteHCL1(src, f)
		if !ok {
			t.Fatalf("%s: not HCL2, but nothing rewritten", filepath.Base(f))
		}
		if _, diags := hclParse(rw); diags.HasErrors() {
			t.Errorf("%s: rewritten source does not parse: %v\n%s", filepath.Base(f), diags, rw)
		}
		for _, s := range m.segs {
			if s.inserted {
				continue
			}
			for off := s.rw; off < s.rw+s.n; off++ {
				if o := m.origByte(off, false); src[o] != rw[off] {
					t.Fatalf("%s: rewritten byte %d (%q) maps to original %d (%q)", filepath.Base(f), off, rw[off], o, src[o])
				}
			}
		}
	}
	if hcl1 != 4 {
		t.Errorf("found %d HCL1-only files in the corpus, want the 4 the brief names", hcl1)
	}
}

// TestRewrite pins what the rewrite produces for each HCL1 form.
func TestRewrite(t *testing.T) {
	tests := []struct {
		name, in, want string
		invalid        bool // left for the HCL2 parser to report
	}{
		{"one-line nested blocks", `topology { segments { rack = "R1" } }`, "topology {\n segments = { rack = \"R1\" } \n}", false},
		{"commas in a body", `capability { a = "x", b = "y" }`, "capability {\n a = \"x\"\n b = \"y\" \n}", false},
		{"quoted argument name", `"rack" = "R1"`, `rack = "R1"`, false},
		{"quoted name that is no identifier", `"a/b" = "R1"`, `"a/b" = "R1"`, true},
		{"map block with quoted keys", "secrets {\n  \"a b\" = \"x\"\n}", "secrets = {\n  \"a b\" = \"x\"\n}", false},
		{"dotted key in a map", `parameters { a.b = "x" }`, `parameters = { "a.b" = "x" }`, false},
		{"empty block stays", `parameters {}` + "\n" + `mount_options {}`, "parameters = {}\nmount_options {}", false},
		{"items after a closing brace", `a { b = 1 } c = 2`, "a {\n b = 1 \n} \nc = 2", false},
		{"labels kept", `plugin "x" { type = "node" }`, "plugin \"x\" {\n type = \"node\" \n}", false},
		{"map block beside an attribute of the same name stays a block", "secrets {\n  a = \"b\"\n}\nsecrets = { c = \"d\" }\nx { y = 1 }", "secrets {\n  a = \"b\"\n}\nsecrets = { c = \"d\" }\nx {\n y = 1 \n}", false},
		{"nested expression untouched", `args = ["a", "b"]` + "\n" + `x { y = {a = 1, b = 2} }`, "args = [\"a\", \"b\"]\nx {\n y = {a = 1, b = 2} \n}", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, ok := rewriteHCL1([]byte(tt.in), "t.hcl")
			got := tt.in
			if ok {
				got = string(out)
			}
			if got != tt.want {
				t.Errorf("rewrite(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if _, diags := hclParse([]byte(got)); diags.HasErrors() != tt.invalid {
				t.Errorf("result parses with %v, want errors: %v", diags, tt.invalid)
			}
		})
	}
}

// TestHCL1PositionsInDetails checks positions HCL writes into a detail ("already set at ...")
// are moved back onto the original source too.
func TestHCL1PositionsInDetails(t *testing.T) {
	src := `id = "db"
type = "csi"
plugin_id = "ebs"
topology_request { required { topology { segments { rack = "R1" } } } }
capability { access_mode = "single-node-writer", access_mode = "x", attachment_mode = "file-system" }
`
	_, diags := ParseVolume("t.hcl", []byte(src), VerbAny)
	if len(diags) != 1 || diags[0].Summary != "Attribute redefined" {
		t.Fatalf("got %v", diags)
	}
	line, col := posOf(t, src, `access_mode = "single-node-writer"`)
	want := fmt.Sprintf("already set at t.hcl:%d,%d-%d.", line, col, col+len("access_mode"))
	if !strings.Contains(diags[0].Detail, want) {
		t.Errorf("detail %q does not contain %q", diags[0].Detail, want)
	}
}

// TestHCL1QuotedBlockNames: HCL1 lets a block's name be quoted as an argument's may be
// (`"parameters" { ... }`, `"capability" { ... }`); Nomad registered each of these files. volctl
// refused them: "Argument names must not be quoted".
func TestHCL1QuotedBlockNames(t *testing.T) {
	src := dbEBS + "\"capability\" {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
		"\"parameters\" { a = \"1\" }\n\"secrets\" {\n  k = \"xyz1\"\n}\n" +
		"\"mount_options\" { fs_type = \"ext4\" }\n"
	v, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
	if diags.HasErrors() || v == nil {
		t.Fatalf("%v", diags)
	}
	if len(v.Capabilities) != 1 || v.Parameters["a"] != "1" || v.Secrets.Plain()["k"] != "xyz1" || v.MountOptions == nil || v.MountOptions.FSType != "ext4" {
		t.Errorf("read %+v", v)
	}
	// A quoted name that is no identifier is still refused, at the name.
	_, diags = ParseVolume("v.hcl", []byte(dbEBS+"\"para meters\" { a = \"1\" }\n"), VerbAny)
	if !diags.HasErrors() {
		t.Errorf("\"para meters\" { ... } read")
	}
}
