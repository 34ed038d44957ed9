package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestValueProblemsSayWhatToWrite: a value refused says what it is and what to write, and what
// it says to write is read. A null in a map or a list was named by cty's type of it, "dynamic"
// ("The value of parameters.c must be a string, not dynamic"); a capacity too large for a size
// was told to be written otherwise, in a form then refused as too large (1e30: "write
// 1000000000000000000000000000000 (bytes)"; 10^30 in HCL1: "write it as a string, in quotes"),
// and -5e3 to be written -5000, a negative size.
func TestValueProblemsSayWhatToWrite(t *testing.T) {
	const jsonVolume = `{"id": "db", "type": "csi", "plugin_id": "ebs",
 "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}], `
	for _, tt := range []struct {
		name, file, src string
		want            string // in the one error's detail
		wantNot         string
	}{
		{"null map value, JSON", "v.json", jsonVolume + `"parameters": {"a": "1", "c": null}}`, "The value of parameters.c must be a string, not null", "dynamic"},
		{"null secret, JSON", "v.json", jsonVolume + `"secrets": {"k": null}}`, "The value of secrets.k must be a string, not null", "dynamic"},
		{"null mount flag, JSON", "v.json", jsonVolume + `"mount_options": {"mount_flags": ["ro", null]}}`, "element 1 is null", "dynamic"},
		{"null map value, HCL", "v.hcl", baseVolume + "parameters = { a = null }\n", "The value of parameters.a must be a string, not null", "dynamic"},
		{"null mount flag, HCL", "v.hcl", baseVolume + "mount_options {\n  mount_flags = [null]\n}\n", "element 0 is null", "dynamic"},
		{"capacity exponent past the largest size, JSON", "v.json", jsonVolume + `"capacity_min": 1e30}`, `too large (the maximum is 9223372036854775807 bytes)`, "write 1000000000000000000000000000000"},
		{"capacity exponent past the largest size, HCL", "v.hcl", baseVolume + "capacity_max = 1e30\n", `too large (the maximum is 9223372036854775807 bytes)`, "write 1000000000000000000000000000000"},
		{"negative capacity with an exponent", "v.hcl", baseVolume + "capacity_max = -5e3\n", `size "-5e3" is negative`, "write -5000"},
		{"capacity past the largest whole number, HCL", "v.hcl", baseVolume + "capacity_min = 1000000000000000000000000000000\n", `too large (the maximum is 9223372036854775807 bytes)`, "in quotes"},
		{"capacity past the largest hex number, HCL", "v.hcl", baseVolume + "capacity_min = 0x1000000000000000000\n", `too large`, "in quotes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := ParseVolume(tt.file, []byte(tt.src), VerbAny)
			var errs []*hcl.Diagnostic
			for _, d := range diags {
				if d.Severity == hcl.DiagError {
					errs = append(errs, d)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Detail, tt.want) || strings.Contains(errs[0].Detail, tt.wantNot) {
				t.Errorf("want one error saying %q, not %q; got %v", tt.want, tt.wantNot, diags)
			}
		})
	}
}

// TestTemplateBlocksSayToWriteTheValuesOut: a dynamic, locals or variable block, from a
// Terraform module or an HCL2 jobspec, was refused as any unknown block, saying only that it
// was not expected; it says that specs are not templates and what to write instead, in a
// volume, plugin and group spec alike.
func TestTemplateBlocksSayToWriteTheValuesOut(t *testing.T) {
	for _, tt := range []struct{ block, want string }{
		{"dynamic \"capability\" {\n  for_each = [1]\n  content {\n    access_mode = \"single-node-writer\"\n  }\n}\n", "write each block it would make out in full"},
		{"locals {\n  x = 1\n}\n", "write each value out where it is used"},
		{"variable \"x\" {\n}\n", "write each value out where it is used"},
	} {
		for _, src := range []string{baseVolume + tt.block, "plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  " + tt.block + "}\n"} {
			p := NewParser()
			_, diags := p.parse("s.hcl", []byte(src), KindVolume, VerbAny)
			if strings.HasPrefix(src, "plugin") {
				_, diags = p.ParsePlugins("s.hcl", []byte(src))
			}
			found := false
			for _, d := range diags {
				found = found || d.Summary == "Unsupported block type" && strings.Contains(d.Detail, "Specs are not templates") && strings.Contains(d.Detail, tt.want)
			}
			if !found {
				t.Errorf("%q: want an error saying specs are not templates and %q, got %v", src, tt.want, diags)
			}
		}
	}
}
