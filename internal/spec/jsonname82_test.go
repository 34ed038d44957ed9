package spec

import (
	"strings"
	"testing"
)

// TestHCLSpecNamedJSONIsReadAsNomadReadsIt: `nomad volume register vol.json` reads an HCL spec
// in a file named .json (its reader picks JSON by a leading `{`, not by the name); volctl read
// it as JSON and refused it with JSON's syntax error (round 81's validate review). Now it is
// read as HCL, with or without a leading comment; a .json file starting otherwise (`[`, a
// string) is still read as JSON, so its error is JSON's.
func TestHCLSpecNamedJSONIsReadAsNomadReadsIt(t *testing.T) {
	const body = `id = "db"
name = "db"
type = "csi"
plugin_id = "p"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`
	quoted := `"id" = "db"` + "\n" + body[len(`id = "db"`)+1:] // HCL1's quoted argument name
	for _, src := range []string{body, "# a volume\n" + body, "// a volume\n" + body, "\n\n" + body, quoted} {
		v, diags := ParseVolume("vol.json", []byte(src), VerbAny)
		if diags.HasErrors() || v == nil || v.ID != "db" || v.PluginID != "p" {
			t.Errorf("vol.json holding HCL %q: %v", src[:12], diags)
		}
	}
	for _, src := range []string{`[{"id": "db"}]`, `7`} {
		_, diags := ParseVolume("vol.json", []byte(src), VerbAny)
		if !diags.HasErrors() {
			t.Errorf("vol.json holding %q was taken", src)
		}
		if !isJSON("vol.json", []byte(src)) {
			t.Errorf("vol.json holding %q is not read as JSON: its error would be HCL's", src)
		}
	}
}

// TestJSONSpecWithACommentSaysItIsReadAsHCL: a .json file with a comment before its `{` is
// read as HCL, as Nomad reads it, and refused as Nomad refuses it; the error says why it was
// read as HCL, not HCL's words alone.
func TestJSONSpecWithACommentSaysItIsReadAsHCL(t *testing.T) {
	_, diags := ParseVolume("vol.json", []byte("// the db\n{\"id\": \"db\"}\n"), VerbAny)
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "read as HCL, as Nomad reads it") {
		t.Errorf("vol.json with a comment before its object: %v; want the error to say it is read as HCL and why", diags)
	}
}
