package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// A register spec's context is the plugin's, copied from what its CreateVolume answered, which
// volctl takes up to MaxPluginMap: past the CSI spec's 4 KiB it is a warning, past
// MaxPluginMap an error naming that bound. Before, 4 KiB was an error, and the spec `volctl
// export nomad` wrote of a volume whose plugin answered more did not validate.
func TestRegisterContextIsHeldToWhatVolctlTakesFromAPlugin(t *testing.T) {
	withContext := func(bytes int) string {
		var b strings.Builder
		b.WriteString(baseVolume + "external_id = \"vol-1\"\ncontext = {\n")
		for i := 0; bytes > 0; i++ {
			k := fmt.Sprintf("k%04d", i)
			v := strings.Repeat("v", max(0, min(1000, bytes-len(k))))
			fmt.Fprintf(&b, "  %s = %q\n", k, v)
			bytes -= len(k) + len(v)
		}
		b.WriteString("}\n")
		return b.String()
	}
	for _, c := range []struct {
		name     string
		bytes    int
		severity hcl.DiagnosticSeverity
		detail   string
	}{
		{"10 KiB", 10 << 10, hcl.DiagWarning, fmt.Sprintf("past the %d bytes (4 KiB) the CSI spec allows a map; it is the plugin's own context", MaxCSIMap)},
		{"16 KiB", MaxPluginMap, hcl.DiagWarning, "it is the plugin's own context"},
		{"17 KiB", MaxPluginMap + 1<<10, hcl.DiagError, fmt.Sprintf("volctl takes a volume's context of up to %d bytes (16 KiB)", MaxPluginMap)},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, diags := ParseVolume("v.hcl", []byte(withContext(c.bytes)), VerbRegister)
			found := false
			for _, d := range diags {
				if d.Severity == hcl.DiagError && c.severity != hcl.DiagError {
					t.Errorf("error: %s: %s", d.Summary, d.Detail)
				}
				found = found || d.Severity == c.severity && strings.HasPrefix(d.Detail, "context holds ") && strings.Contains(d.Detail, c.detail)
			}
			if !found {
				t.Errorf("no diagnostic saying %q; got %v", c.detail, diags)
			}
			if c.severity == hcl.DiagWarning && (v == nil || len(v.Context) == 0) {
				t.Errorf("the context was not read: %+v", v)
			}
		})
	}
}

// A register spec's topology_request.required is the volume's accessible topology as its
// plugin answered it, which volctl takes past the CSI spec's rules on a segment (up to 512
// bytes a key or value, 16 KiB the segments): a segment those rules do not allow is a warning
// there, one past volctl's bounds an error. A create's topology_request, the spec author's and
// sent to the plugin, keeps the CSI spec's rules. Before, register refused what volctl took
// from a plugin, and `volctl export nomad` of such a volume failed its own check.
func TestRegisterTopologyIsHeldToWhatVolctlTakesFromAPlugin(t *testing.T) {
	withSegments := func(segments string) string {
		return baseVolume + "topology_request {\n  required {\n    topology { segments = {" + segments + "} }\n  }\n}\n"
	}
	for _, c := range []struct {
		name, segments   string
		register, create hcl.DiagnosticSeverity
		detail           string
	}{
		{"an upper-case prefix", `"Topology.Example.COM/zone" = "a"`, hcl.DiagWarning, hcl.DiagError, "the prefix must begin and end with a lower-case letter or digit"},
		{"a value of 100 bytes", `zone = "` + strings.Repeat("z", 100) + `"`, hcl.DiagWarning, hcl.DiagError, "is 100 characters long"},
		{"a value with a space and a slash", `rack = "r 1/2"`, hcl.DiagWarning, hcl.DiagError, "may contain only letters"},
		{"keys alike but for case", `zone = "a", Zone = "b"`, hcl.DiagWarning, hcl.DiagError, "differ only in case"},
		{"a value of 513 bytes", `zone = "` + strings.Repeat("z", 513) + `"`, hcl.DiagError, hcl.DiagError, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for verb, want := range map[Verb]hcl.DiagnosticSeverity{VerbRegister: c.register, VerbCreate: c.create} {
				src := withSegments(c.segments)
				if verb == VerbRegister {
					src += "external_id = \"vol-1\"\n"
				} else {
					src += "name = \"db\"\n"
				}
				v, diags := ParseVolume("v.hcl", []byte(src), verb)
				found := false
				for _, d := range diags {
					if d.Severity == hcl.DiagError && want != hcl.DiagError {
						t.Errorf("%s: error: %s: %s", verb, d.Summary, d.Detail)
					}
					found = found || d.Severity == want && strings.Contains(d.Summary, "opology segment") && strings.Contains(d.Detail, c.detail)
				}
				if !found {
					t.Errorf("%s: no %v saying %q; got %v", verb, want, c.detail, diags)
				}
				if want == hcl.DiagWarning && (v == nil || v.TopologyRequest == nil || len(v.TopologyRequest.Required) != 1) {
					t.Errorf("%s: the topology was not read: %+v", verb, v)
				}
			}
		})
	}
}
