package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// A register spec's context is the plugin's, copied from what its CreateVolume answered, which
// volctl takes up to MaxPluginContext: past the CSI spec's 4 KiB it is a warning, past
// MaxPluginContext an error naming that bound. Before, 4 KiB was an error, and the spec `volctl
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
		{"16 KiB", MaxPluginContext, hcl.DiagWarning, "it is the plugin's own context"},
		{"17 KiB", MaxPluginContext + 1<<10, hcl.DiagError, fmt.Sprintf("volctl takes a volume's context of up to %d bytes (16 KiB)", MaxPluginContext)},
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
