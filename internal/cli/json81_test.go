package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateJSONDuplicateDoesNotPrintTheFirstFilesSecret: a.hcl declares volume
// "orders-primary-db" with a secret of that same value (Nomad's JuiceFS demo shape), b.hcl
// declares the same volume ID with no secrets block. `volctl validate --json a.hcl b.hcl`
// masks the ID wherever a.hcl's own lines name it, but b.hcl's "Duplicate volume ID"
// diagnostic is scrubbed only of b.hcl's secrets (validateRun: csi.Scrubber(fileSecrets(f))
// of the file being read), so its detail prints a.hcl's secret value in clear on stdout, the
// stream a CI job logs, against docs/json.md ("Secrets ... never appear"). Correct: every
// diagnostic and summary is scrubbed of the secrets of every file validate has read so far
// (a.hcl's included), e.g. `The volume "[REDACTED]" is declared in both a.hcl and b.hcl`.
// Found by helper review81 (json).
func TestValidateJSONDuplicateDoesNotPrintTheFirstFilesSecret(t *testing.T) {
	const secret = "orders-primary-db"
	files := secretIDFiles(t, secret, true)
	h := &cliHarness{state: filepath.Join(t.TempDir(), "state")}
	code, out, errOut := h.runReported(append([]string{"validate", "--json"}, files...)...)
	if code != ExitUsage || !strings.Contains(out, "Duplicate volume ID") {
		t.Fatalf("premise: validate --json a.hcl b.hcl (one volume ID twice): exit %d, want 2 with a duplicate diagnostic\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, secret) || strings.Contains(errOut, secret) {
		t.Errorf("validate --json prints a.hcl's secret value %q in clear (b.hcl's duplicate diagnostic names it):\nstdout:\n%s\nstderr:\n%s", secret, out, errOut)
	}
}

// secretIDFiles writes a.hcl and b.hcl (mode 0600), each declaring volume ID secret, the one
// holding it as a secret value too (a.hcl when first, else b.hcl), and returns their paths.
func secretIDFiles(t *testing.T, secret string, first bool) []string {
	t.Helper()
	plain := strings.ReplaceAll(validVolume, `"db"`, `"`+secret+`"`)
	withSecret := plain + "secrets {\n  name = \"" + secret + "\"\n}\n"
	specs := map[string]string{"a.hcl": withSecret, "b.hcl": plain}
	if !first {
		specs = map[string]string{"a.hcl": plain, "b.hcl": withSecret}
	}
	dir := writeSpecs(t, specs)
	var files []string
	for _, n := range []string{"a.hcl", "b.hcl"} {
		path := filepath.Join(dir, n)
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	return files
}
