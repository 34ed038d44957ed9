package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// secretNameWarnings are the details of the "Secret in the volume's names" warnings of src,
// parsed for register; the spec must be read.
func secretNameWarnings(t *testing.T, src string) []string {
	t.Helper()
	v, diags := ParseVolume("v.hcl", []byte(src), VerbRegister)
	if diags.HasErrors() || v == nil {
		t.Fatalf("spec refused: %v", diags)
	}
	var named []string
	for _, d := range diags {
		if d.Summary == "Secret in the volume's names" {
			named = append(named, d.Detail)
		}
	}
	return named
}

// TestSecretInTheVolumesNamesInAnotherCaseIsWarnedOf: volctl scrubs a secret value of
// MinFoldLen bytes or more from all it prints in any case of its ASCII letters (csi.Scrubber:
// the secret "postgres" masks "Postgres primary" as "[REDACTED] primary"), and prints a
// volume's names scrubbed so (EachVolumeShown). checkSecretsInNames, whose warning exists to say
// that a name will print masked, compares the value with the names case-sensitively: a spec
// whose secret is "postgres" and whose name is "Postgres primary" is read with no warning, and
// the volume list then shows its name as "[REDACTED] primary" with nothing having said why.
// Correct: the value is looked for in the names as the scrubber finds it (in any case of its
// ASCII letters, from MinFoldLen bytes on), and the warning given, naming the key and the name.
// Found by helper review77 (spec).
func TestSecretInTheVolumesNamesInAnotherCaseIsWarnedOf(t *testing.T) {
	src := baseVolume + "name = \"Postgres primary\"\nexternal_id = \"vol-0a1b\"\n" +
		"secrets {\n  username = \"postgres\"\n}\n"
	named := secretNameWarnings(t, src)
	if len(named) != 1 || !strings.Contains(named[0], `secret "username"`) || !strings.Contains(named[0], "the volume's name.") {
		t.Fatalf("warnings %q; want one saying the value of secret \"username\" is part of the volume's name, "+
			"which volctl prints masked (it scrubs an 8-byte secret in any case)", named)
	}
}

// TestSecretInTheVolumesNamespaceIsWarnedOf: the volume list and status print a volume's
// namespace scrubbed of the state's secrets, as its ID, name and plugin ID
// (EachVolumeShown), but checkSecretsInNames looks at the ID, name, plugin ID and external ID
// only: a secret whose value is the namespace ("tenant-acme") is read without a word, and
// every listing then shows the volume's namespace as [REDACTED]. Correct: the namespace is one
// of the names looked at, and the warning says the value is part of the volume's namespace.
// Found by helper review77 (spec).
func TestSecretInTheVolumesNamespaceIsWarnedOf(t *testing.T) {
	src := baseVolume + "namespace = \"tenant-acme\"\nexternal_id = \"vol-0a1b\"\n" +
		"secrets {\n  tenant = \"tenant-acme\"\n}\n"
	named := secretNameWarnings(t, src)
	if len(named) != 1 || !strings.Contains(named[0], `secret "tenant"`) || !strings.Contains(named[0], "namespace") {
		t.Fatalf("warnings %q; want one saying the value of secret \"tenant\" is part of the volume's namespace, which volctl prints masked", named)
	}
}

// TestGroupCountWithAFractionIsNamedAsWritten: a group's count with a fraction is refused, as
// Nomad refuses it, but the error names the number rounded to ten significant digits
// (big.Float.Text('g', 10) in decoder.integer): count = 1.00000000001 is refused with
// "count must be a whole number, not 1.", and count = 2147483647.00001 with "not 2147483647",
// each a whole number (the latter the largest count allowed), so the error contradicts
// itself and does not show what is wrong. Correct: the value is named as written (or exactly),
// "not 1.00000000001".
// Found by helper review77 (spec).
func TestGroupCountWithAFractionIsNamedAsWritten(t *testing.T) {
	for _, count := range []string{"1.00000000001", "2147483647.00001"} {
		src := "group \"web\" {\n  count = " + count + "\n  volume \"data\" {\n    type = \"csi\"\n    source = \"db\"\n" +
			"    access_mode = \"multi-node-multi-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n"
		g, diags := NewParser().ParseGroup("g.hcl", []byte(src))
		if g != nil || !diags.HasErrors() {
			t.Fatalf("count = %s: read as count %d; want it refused", count, g.Count)
		}
		var errs []*hcl.Diagnostic
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				errs = append(errs, d)
			}
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Detail, "whole number") {
			t.Fatalf("count = %s: diagnostics %v; want one error saying count must be a whole number", count, diags)
		}
		if !strings.Contains(errs[0].Detail, count) {
			t.Errorf("count = %s: error %q names another number, a whole one; want it to name %s", count, errs[0].Detail, count)
		}
	}
}
