package spec

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestForExpressionKeyFromAHeredocOrNumberIsHidden (found by helper review65): architecture.md ("Secrets"):
// snippets mask, in env, "each string whole ..., heredoc bodies, numbers and bare names", and
// "a diagnostic's summary and detail do not quote what its snippet masks". hideMasked now
// hides, outside the subject, only the masked runs written between double quotes
// (maskedRuns(..., quoted=true)): a for expression's list of heredocs or numbers is masked in
// the snippet, and HCL's "Two different items produced the key \"TOPSECRET\n\"" prints the
// value in full. Before the change every masked run of the file was hidden, these too.
func TestForExpressionKeyFromAHeredocOrNumberIsHidden(t *testing.T) {
	for _, c := range []struct{ name, list, secret string }{
		{"heredoc", "[<<EOT\nTOPSECRET\nEOT\n, <<EOT\nTOPSECRET\nEOT\n]", "TOPSECRET"},
		{"indented heredoc", "[<<-EOT\n  TOPSECRET\n  EOT\n, <<-EOT\n  TOPSECRET\n  EOT\n]", "TOPSECRET"},
		{"number", `[31415926, 31415926]`, "31415926"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"/x\"\n    env {\n" +
				"      TOKEN = {for k in " + c.list + " : k => 1}\n    }\n  }\n}\n"
			text, diags := renderFailure(t, src, 120)
			if strings.Contains(text, c.secret) {
				t.Errorf("env value %q, masked in the snippet, rendered in the diagnostic:\n%s", c.secret, text)
			}
			for _, j := range JSONDiagnostics("t.spec", diags) {
				if strings.Contains(j.Summary+j.Detail, c.secret) {
					t.Errorf("env value %q in JSON diagnostic: %s: %s", c.secret, j.Summary, j.Detail)
				}
			}
		})
	}
}

// TestManyDiagnosticsAreHiddenInLinearTime (found by helper review65; the bound is a liveness bound, 0.8 s under -race here): hideMasked, for each diagnostic with
// masked text under its subject, scans the whole masked prefix of the file again and calls
// hclStringRead (two strings.NewReplacer built per call) for every quoted string in it:
// O(diagnostics x strings). A 110 KB plugin spec, within the 65,536-item limit, with 2,000
// duplicate-key for expressions in env takes ~45 s to parse (10 s for 1,000: quadratic),
// nearly all of it in hclStringRead's replacers (pprof). The file's quoted runs are the same
// for every diagnostic: read once, it is a fraction of a second.
func TestManyDiagnosticsAreHiddenInLinearTime(t *testing.T) {
	var b strings.Builder
	b.WriteString("plugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"/x\"\n    env {\n")
	const n = 2000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "      c%d = {for k in [\"AAAA%d\",\"AAAA%d\"]: k => 1}\n", i, i, i)
	}
	b.WriteString("    }\n  }\n}\n")
	src := []byte(b.String())
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		_, diags := NewParser().Parse("t.spec", src, VerbAny)
		done <- len(diags)
	}()
	const bound = 10 * time.Second
	select {
	case nd := <-done:
		if nd < n {
			t.Fatalf("%d diagnostics, want at least %d (one per duplicate key)", nd, n)
		}
		t.Logf("%d bytes, %d diagnostics: parsed in %v", len(src), nd, time.Since(start))
	case <-time.After(bound):
		t.Fatalf("a %d-byte spec with %d duplicate-key diagnostics in env not parsed after %v (hideMasked re-reads every quoted string of the file for each diagnostic)",
			len(src), n, bound)
	}
}
