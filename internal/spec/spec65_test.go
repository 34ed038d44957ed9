package spec

import (
	"strings"
	"testing"
)

// TestForExpressionDuplicateKeyDoesNotQuoteASecret (found by helper review65): docs/specs.md says secret values
// (an exec block's env) and mount flags "are never printed by any command, in any output form",
// and architecture.md that "a diagnostic's summary and detail do not quote what its snippet
// masks". Plugin and group specs keep HCL2 expressions, and HCL's "Duplicate object key" error of a
// for expression quotes the key a value produced: the snippet masks the strings, the detail
// prints the value in full, since hideMasked scrubs only the masked text under the subject (the
// key expression `k`), not the value it evaluated to.
func TestForExpressionDuplicateKeyDoesNotQuoteASecret(t *testing.T) {
	const secret = "TOPSECRET"
	for _, c := range []struct{ name, src string }{
		{"plugin env", "plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"/x\"\n    env {\n" +
			"      TOKEN = {for k in [\"TOPSECRET\", \"TOPSECRET\"] : k => 1}\n    }\n  }\n}\n"},
		{"group mount_flags", "group \"web\" {\n  count = 1\n  volume \"data\" {\n    type = \"csi\"\n    source = \"data\"\n" +
			"    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n    mount_options {\n" +
			"      mount_flags = [for k, v in {for f in [\"password=TOPSECRET\", \"password=TOPSECRET\"] : f => 1} : k]\n    }\n  }\n" +
			"  volume_mount {\n    volume = \"data\"\n    destination = \"/srv/data\"\n  }\n}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, diags := renderFailure(t, c.src, 120)
			if strings.Contains(text, secret) {
				t.Errorf("secret rendered:\n%s", text)
			}
			for _, j := range JSONDiagnostics("t.spec", diags) {
				if strings.Contains(j.Summary+j.Detail, secret) {
					t.Errorf("secret in JSON diagnostic: %s: %s", j.Summary, j.Detail)
				}
			}
		})
	}
}

// TestMapBuiltByAForExpressionIsRefusedAsAnExpression (found by helper review65): a plugin spec keeps HCL2 expressions
// (architecture.md: "A value of a plugin or group spec that would build more than 65,536 values
// (for expressions nested over long lists) is refused before it is evaluated"; a for expression
// in args is read, TestSmallForExpressionsStillEvaluate). An env map built by a for expression is
// a map of strings, yet it is refused with "env must be a map of strings, like env = { key =
// "value" }": stringMapOf takes only an object constructor (hcl.ExprMap) and calls notAMap for
// anything else, without evaluating it. The error names the wrong thing: the value is exactly
// what it asks for. Either read it, or say what is refused (an expression, not the value's type).
func TestMapBuiltByAForExpressionIsRefusedAsAnExpression(t *testing.T) {
	src := "plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"/x\"\n" +
		"    env = {for k in [\"A\", \"B\"] : k => \"x\"}\n  }\n}\n"
	plugins, diags := NewParser().ParsePlugins("p.hcl", []byte(src))
	if !diags.HasErrors() {
		if len(plugins) != 1 || plugins[0].Exec == nil || plugins[0].Exec.Env["A"] != "x" || plugins[0].Exec.Env["B"] != "x" {
			t.Fatalf("read, but env is not {A=x, B=x}: %+v", plugins)
		}
		return
	}
	for _, d := range diags {
		if strings.Contains(d.Detail, "must be a map of strings") {
			t.Errorf("a for expression that builds a map of strings is refused as not one:\n%s: %s (at %s)", d.Summary, d.Detail, d.Subject)
		}
	}
}

// TestJSONTrailingDataSaysNomadReadsTheFirstObject (found by helper review65): Nomad's HCL1 JSON reader (the
// parser `nomad volume register` uses) reads the root object and stops: what follows it (a
// second object, with its secrets; stray text) is dropped without a word, and the volume is
// registered. volctl refuses the file with hcl/json's "Extraneous data after value: Extra
// characters appear after the JSON value", which neither says that Nomad reads the file nor
// what Nomad makes of it; docs/specs.md documents no such difference, and the compat corpus
// (testdata/nomadcompat/EXPECT) has no case of it. The brief of the compat corpus is that
// volctl accepts what Nomad accepts or says why it differs.
func TestJSONTrailingDataSaysNomadReadsTheFirstObject(t *testing.T) {
	const head = `{"id":"db","type":"csi","plugin_id":"ebs","capability":[{"access_mode":"single-node-writer","attachment_mode":"file-system"}]}`
	for _, tail := range []string{"\n{\"secrets\": {\"k\": \"v1234\"}}\n", "\n}\n"} {
		v, diags := ParseVolume("v.json", []byte(head+tail), VerbAny)
		if v != nil && !diags.HasErrors() {
			continue // read as Nomad reads it
		}
		said := false
		for _, d := range diags {
			said = said || strings.Contains(d.Summary+d.Detail, "Nomad")
		}
		if !said {
			t.Errorf("JSON spec with %q after its object: refused without saying that Nomad reads the first object and drops the rest:\n%v", tail, diags)
		}
	}
}
