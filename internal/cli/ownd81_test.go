package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateTextDoesNotPrintALaterFilesSecretAsAnEarlierFilesVolumeID: a.hcl declares volume
// "orders-primary-db" with no secrets; b.hcl declares the same volume ID with a secret of that
// same value (Nomad's JuiceFS demo shape: the ID is the secret). `volctl validate --json a.hcl
// b.hcl` masks it everywhere (the array is scrubbed once, at the end, of every file's secrets,
// "a later file's too"), but without --json validateRun prints a.hcl's summary line, scrubbed
// only of the secrets read so far, before b.hcl is read: b.hcl's secret value goes to stdout in
// clear, the stream a CI job logs. Correct: text mode scrubs every line it prints of every
// file's secrets, as --json does (read and parse every file before printing, or hold the lines).
// Found by helper review81 (ownd).
func TestValidateTextDoesNotPrintALaterFilesSecretAsAnEarlierFilesVolumeID(t *testing.T) {
	const secret = "orders-primary-db"
	files := secretIDFiles(t, secret, false)
	h := &cliHarness{state: filepath.Join(t.TempDir(), "state")}
	code, out, errOut := h.runReported(append([]string{"validate", "--json"}, files...)...)
	if code != ExitUsage || strings.Contains(out, secret) {
		t.Fatalf("premise: validate --json a.hcl b.hcl: exit %d, want 2 with b.hcl's secret masked\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = h.runReported(append([]string{"validate"}, files...)...)
	if code != ExitUsage {
		t.Fatalf("premise: validate a.hcl b.hcl (one volume ID twice): exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, secret) || strings.Contains(errOut, secret) {
		t.Errorf("validate (text) prints b.hcl's secret value %q in clear (a.hcl's summary, printed before b.hcl was read, names it), which --json masks:\nstdout:\n%s\nstderr:\n%s", secret, out, errOut)
	}
}
