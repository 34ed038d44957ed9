package spec

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// docs/specs.md documents every argument and block the spec decoders accept: a field added to a
// schema without a line in the reference fails here.
func TestSpecReferenceCoversEveryField(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "specs.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	schemas := map[string]*schema{
		"volume": volumeSchema, "capability": capabilitySchema, "mount_options": mountOptionsSchema,
		"topology_request": topologyRequestSchema, "required/preferred": topologyListSchema, "topology": topologySchema,
		"plugin file": pluginFileSchema, "plugin": pluginSchema, "exec": execSchema,
		"group file": groupFileSchema, "group": groupSchema, "group volume": volumeRequestSchema, "volume_mount": volumeMountSchema,
	}
	for what, s := range schemas {
		for _, name := range s.names() {
			// In a code span: `name`, `volume.name`, `exec { command, args }`, ...
			if !regexp.MustCompile("`[^`\n]*\\b" + regexp.QuoteMeta(name) + "\\b[^`\n]*`").MatchString(doc) {
				t.Errorf("docs/specs.md does not document %q of the %s schema", name, what)
			}
		}
	}
}
