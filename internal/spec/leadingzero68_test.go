package spec

import (
	"strings"
	"testing"
)

// A number written with leading zeros in a secret (env here) is masked in the snippet, and
// hideMasked hides from a diagnostic's words the value as written ("0012345670") and, since
// round 68, as volctl sends it (octal: "2739128"). But HCL2 reads the literal in decimal, its
// leading zeros dropped: a for expression's duplicate key is "12345670", which HCL quotes in
// its message. That was neither form hidden, and a substring the written form's replacement
// never matches: the secret's digits were printed. Found by helper review68.
func TestLeadingZeroSecretIsHiddenAsHCLReadsIt(t *testing.T) {
	for _, c := range []struct{ name, list, secret string }{
		{"octal digits", `[0012345670, 0012345670]`, "12345670"},
		{"decimal digits", `[0031415926, 0031415926]`, "31415926"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"/x\"\n    env {\n" +
				"      TOKEN = {for k in " + c.list + " : k => 1}\n    }\n  }\n}\n"
			text, diags := renderFailure(t, src, 120)
			if strings.Contains(text, c.secret) {
				t.Errorf("env value %s (as HCL reads it: %q), masked in the snippet, rendered in the diagnostic:\n%s", c.list, c.secret, text)
			}
			for _, j := range JSONDiagnostics("t.spec", diags) {
				if strings.Contains(j.Summary+j.Detail, c.secret) {
					t.Errorf("env value %q in JSON diagnostic: %s: %s", c.secret, j.Summary, j.Detail)
				}
			}
		})
	}
}
