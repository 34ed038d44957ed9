package spec

import (
	"strings"
	"testing"
)

// TestForExpressionDuplicateKeyWithAnEscapeDoesNotQuoteASecret (found by helper review65): hideMasked now
// hides, in a diagnostic with masked text under its subject, every masked run of the file,
// so that HCL's "Two different items produced the key \"TOPSECRET\"" of a for expression in
// env does not print the secret its list holds (TestForExpressionDuplicateKeyDoesNotQuoteASecret).
// It hides the runs as written in the source, and as %q would quote them: a secret written
// with an HCL escape Go's %q does not use (\u0053 for S; $${ for a literal ${, which a
// password may hold) is a different text once evaluated, and HCL's detail quotes the value.
func TestForExpressionDuplicateKeyWithAnEscapeDoesNotQuoteASecret(t *testing.T) {
	for _, c := range []struct{ name, lit, secret string }{
		{"unicode escape", `TOP\u0053ECRET`, "TOPSECRET"},
		{"template escape", `hunter$${22}x`, "hunter${22}x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"/x\"\n    env {\n" +
				"      TOKEN = {for k in [\"" + c.lit + "\", \"" + c.lit + "\"] : k => 1}\n    }\n  }\n}\n"
			text, diags := renderFailure(t, src, 120)
			if strings.Contains(text, c.secret) {
				t.Errorf("secret %q (written %q in env) rendered:\n%s", c.secret, c.lit, text)
			}
			for _, j := range JSONDiagnostics("t.spec", diags) {
				if strings.Contains(j.Summary+j.Detail, c.secret) {
					t.Errorf("secret %q in JSON diagnostic: %s: %s", c.secret, j.Summary, j.Detail)
				}
			}
		})
	}
}
