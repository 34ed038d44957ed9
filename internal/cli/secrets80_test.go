package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestClaimMountFlagRefusalShowsNoPasswordItHolds: `volctl volume claim db --alloc web-0
// --mount-flag "-o username=alice,password=SECRET"`, mount(8)'s option text pasted with its
// "-o". The refusal of a --mount-flag value that begins with "-" (request, this round's
// TestClaimFlagValueThatIsAFlagIsRefused) quotes the value whole with %q, so stderr (and
// whatever log a script keeps of it) gets the cifs password in the clear. Everywhere else
// volctl never prints a mount flag: spec.MountFlags redacts under every verb and in JSON,
// MountOptions.Describe says "mount_flags=[REDACTED] (N)", spec diagnostics mask
// mount_flags' values, and the --secret refusal does not quote its value either; the value
// is not in the state (nothing was claimed) and no engine is open, so Factory.RedactError
// cannot scrub it. Correct: the refusal names --mount-flag and says why (it begins with "-")
// without quoting what the flag holds (or with its secrets masked, spec.MountFlagSecrets),
// exit 2, no claim made.
// Found by helper review80 (secrets).
// Found by helper review80 (secrets), in this round's own change.
func TestClaimMountFlagRefusalShowsNoPasswordItHolds(t *testing.T) {
	const secret = "rv80-cifs-Pw7q"
	flag := "-o username=alice,password=" + secret
	if got := spec.MountFlagSecrets(flag); len(got) == 0 || got[0] != secret {
		t.Fatalf("precondition: spec.MountFlagSecrets(%q) = %q; want the password %q counted as a secret", flag, got, secret)
	}
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	args := []string{"volume", "claim", "db", "--alloc", "web-0", "--mount-flag", flag}
	code, out, errOut := h.runReported(args...)
	t.Cleanup(func() {
		if code == ExitOK {
			h.e.Release(h.ctx, "db", "web-0") // a claim the test made: unmounted
		}
	})
	if code != ExitUsage || !strings.Contains(errOut, "--mount-flag") {
		t.Fatalf("precondition: volctl %s: exit %d, stdout %q, stderr %q; want the value beginning with \"-\" refused, exit 2, naming --mount-flag",
			strings.Join(args, " "), code, out, errOut)
	}
	if strings.Contains(out+errOut, secret) {
		t.Errorf("volctl volume claim ... --mount-flag '-o username=alice,password=%s' prints the password it holds (exit %d):\nstdout: %s\nstderr: %s",
			secret, code, out, errOut)
	}
}
