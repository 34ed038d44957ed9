package spec

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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

// TestSpecReferenceCoversEverySizeUnit: docs/specs.md names every unit a size takes
// (sizeUnits), each of the 1024 and 1000 families written out with its B (`EiB`, `EB`) and
// the forms without it (`Gi`, `G`) and in any case said, so that a reader does not take a
// unit volctl and Nomad read for one they refuse.
func TestSpecReferenceCoversEverySizeUnit(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "specs.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for unit := range sizeUnits {
		var want string
		switch {
		case unit == "" || unit == "b":
			want = "`B`"
		case strings.HasSuffix(unit, "ib"):
			want = "`" + strings.ToUpper(unit[:1]) + "iB`"
		case strings.HasSuffix(unit, "b"):
			want = "`" + strings.ToUpper(unit) + "`"
		default: // k, ki, ...: the unit without its B
			want = "without the `B`"
		}
		if !strings.Contains(doc, want) {
			t.Errorf("docs/specs.md does not say a size takes %q: want %s in its Sizes sentence", unit, want)
		}
	}
	if !strings.Contains(doc, "in any case") {
		t.Error("docs/specs.md does not say a size's unit is read in any case (`10gib`)")
	}
}

// TestAgentDocGivesEverySettingsBounds: docs/agent.md's table of the agent's settings gives
// each one's least and most as agentSettingBounds holds them.
func TestAgentDocGivesEverySettingsBounds(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	short := func(d time.Duration) string {
		s := d.String()
		for _, zero := range []string{"0s", "0m"} {
			if strings.HasSuffix(s, zero) && len(s) > len(zero) && strings.ContainsAny(s[:len(s)-len(zero)], "hm") {
				s = s[:len(s)-len(zero)]
			}
		}
		return s
	}
	for _, name := range AgentSettings {
		least, most := agentSettingBounds[name].Least, agentSettingBounds[name].Most
		row := regexp.MustCompile("(?m)^\\| `" + name + "` \\| [^|]+ \\| " + regexp.QuoteMeta(short(least)) + " \\| " + regexp.QuoteMeta(short(most)) + " \\|$")
		if !row.Match(raw) {
			t.Errorf("docs/agent.md has no row `| `%s` | <default> | %s | %s |`", name, short(least), short(most))
		}
	}
}
