package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestStringValueThenBlockOnOneLineIsReadAsNomadReadsIt: HCL1, which Nomad reads volume
// specs with, has no line ends in its grammar, so `name = "n" capability { ... }` is an
// argument and then a block, and `nomad volume register` reads the file. volctl's HCL1 rewrite
// (hcl1.go) means to give such an item its own line (nextItem), but rewriter.header does not
// reset the body frame's valueEnd when it starts a new attribute: the flag is still true from
// the previous line's value (`id = "v"`'s closing quote), so the new value's opening quote is
// taken for the start of another item, `"n" capability {` for a block "n" labelled
// "capability". The file is rewritten to `name = \n n capability {` and refused with HCL's
// "Invalid expression ... found an invalid expression token" pointing at the valid string "n"
// (the same file with the block first, or a number for the value, is read). Correct: the file
// is read as Nomad reads it, name "n" and one capability, no diagnostic (header resets
// valueEnd when it starts an attribute's value). Found by helper review78 (validate).
func TestStringValueThenBlockOnOneLineIsReadAsNomadReadsIt(t *testing.T) {
	for _, src := range []string{
		"id = \"db\"\nplugin_id = \"ebs\"\ntype = \"csi\"\n" +
			"name = \"db\" capability { access_mode = \"single-node-writer\" attachment_mode = \"file-system\" }\n",
		"id = \"db\"\nplugin_id = \"ebs\"\ntype = \"csi\"\n" +
			"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
			"name = \"db\" mount_options { fs_type = \"ext4\" }\n",
		"id = \"db\"\nplugin_id = \"ebs\"\ntype = \"csi\"\n" +
			"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
			"secrets { user = \"admin-user\" } name = \"db\" parameters { zone = \"a\" }\n",
		"id = \"db\"\nplugin_id = \"ebs\"\ntype = \"csi\"\n" +
			"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
			"name = \"db\" \"parameters\" { tier = \"gold\" }\n",
	} {
		v, diags := NewParser().ParseVolume("v.hcl", []byte(src), VerbCreate)
		if len(diags) > 0 || v == nil {
			t.Errorf("a spec Nomad reads is refused:\n%s\ndiagnostics:\n%s", src, diags.Error())
			continue
		}
		if v.Name != "db" || len(v.Capabilities) != 1 {
			t.Errorf("read as name %q with %d capabilities, want name \"db\" and 1:\n%s", v.Name, len(v.Capabilities), src)
		}
	}
}

// TestInitVolumeUsageCommentsNameTheFileWhateverItsName: `volctl init volume FILE` rewrites
// the example's usage comments (`volctl validate --for create FILE`, `volctl volume create
// FILE`) to name the file written, as `init plugin` and `init group` do, but ExampleFor
// returns the example untouched when the file's name is no valid new volume ID (`-old.hcl`,
// a name mixing scripts, one past 128 bytes): the volume keeps the ID "data", which is
// right, and the comments keep naming volume.hcl, a file the user may not have, or one
// `volctl init` wrote earlier holding another volume, which the copied command then creates.
// Correct: the comments name the file written (`./-old.hcl`), whatever the volume's ID.
// Found by helper review78 (validate).
func TestInitVolumeUsageCommentsNameTheFileWhateverItsName(t *testing.T) {
	for _, file := range []string{"-old.hcl", "dЬ.hcl"} {
		src, err := ExampleFor(KindVolume, file)
		if err != nil {
			t.Fatal(err)
		}
		want := shellWord(file)
		for _, cmd := range []string{"#   volctl validate --for create " + want + "\n", "#   volctl volume create " + want + "\n"} {
			if !strings.Contains(string(src), cmd) {
				t.Errorf("init volume %s: the example's usage comments lack %q (they name volume.hcl):\n%s", file, cmd, firstLines(src, 3))
			}
		}
	}
}

// TestInitVolumeOfADecomposedFileNameValidatesWithoutWarnings: `volctl init volume FILE`
// names the volume after the file, and its help says the example validates as written. A
// file name with a letter and its combining mark apart (`café.hcl` as macOS and some tools
// write names, in NFD) passes ValidateNewID, and ExampleFor writes the stem as it is into id
// and name; HCL2 reads every string in NFC, so validate of the fresh example warns twice
// ("Value not in Unicode normal form C") about the values init itself wrote, and the volume's
// ID is not the stem written. Correct: the ID and name are written in NFC (the form volctl
// reads them in), and the example validates with no diagnostic. Found by helper review78
// (validate).
func TestInitVolumeOfADecomposedFileNameValidatesWithoutWarnings(t *testing.T) {
	file := "cafe\u0301.hcl"
	src, err := ExampleFor(KindVolume, file)
	if err != nil {
		t.Fatal(err)
	}
	v, diags := NewParser().ParseVolume(file, src, VerbCreate)
	if v == nil || diags.HasErrors() {
		t.Fatalf("precondition: the example written for %q does not validate:\n%s", file, diags.Error())
	}
	if v.ID != "caf\u00e9" {
		t.Fatalf("precondition: the volume is not named after the file: id %q", v.ID)
	}
	if len(diags) > 0 {
		t.Errorf("the example init writes for %q validates with %d diagnostics about what init wrote:\n%s", file, len(diags), summaries(diags))
	}
}

func firstLines(src []byte, n int) string {
	lines := strings.SplitN(string(src), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

func summaries(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(d.Summary)
		if d.Subject != nil {
			b.WriteString(" at " + d.Subject.String())
		}
		b.WriteString("\n")
	}
	return b.String()
}
