package spec

import (
	"strings"
	"testing"
)

// A volume spec's namespace is one Nomad could hold the volume in: Nomad names namespaces with
// ASCII letters, digits and hyphens, at most 128 of them (`nomad namespace apply` refuses any
// other), and reads "*" as every namespace. Before, `namespace = "*"` (or "team_a") was read,
// validated and created locally, and only `volctl nomad register` said so, once Nomad refused
// the registration. Now the spec is refused at the value, file:line:column.
func TestNamespaceNomadCannotHaveIsRefusedAtTheValue(t *testing.T) {
	spec := func(ns string) []byte {
		return []byte("id = \"db\"\ntype = \"csi\"\nplugin_id = \"p\"\nexternal_id = \"e\"\nnamespace = \"" + ns + "\"\n" +
			"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n")
	}
	for _, tt := range []struct{ ns, want string }{
		{"*", "names every namespace"},
		{"team_a", "ASCII letters, digits and hyphens"},
		{"team.a", "'.' (its character 5)"},
		{"équipe", "ASCII letters"},
	} {
		_, diags := ParseVolume("v.hcl", spec(tt.ns), VerbRegister)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.want) {
			t.Errorf("namespace %.20q: %v, want it refused saying %q", tt.ns, diags, tt.want)
			continue
		}
		if s := diags[0].Subject; s == nil || s.Filename != "v.hcl" || s.Start.Line != 5 || s.Start.Column != 13 {
			t.Errorf("namespace %.20q: refused at %v, want v.hcl:5:13, the value", tt.ns, diags[0].Subject)
		}
	}
	for _, ns := range []string{"default", "team-a", "Prod2", strings.Repeat("n", MaxIDLength)} {
		if _, diags := ParseVolume("v.hcl", spec(ns), VerbRegister); diags.HasErrors() {
			t.Errorf("namespace %.20q: %v, want it read: Nomad may have it", ns, diags)
		}
	}
}
