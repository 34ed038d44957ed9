package cli

import (
	"strings"
	"testing"
)

// The adversary: NOMAD_ADDR with a plain user of one or two characters as its only credential
// (http://q7@host: a proxy's key, or a password a person chose, as short as the user likes),
// and a nomad command that panics with a value printing the request's address and its user. A
// crash report is scrubbed of the credentials the command sends (connectNomad), but the user
// went through the scrubber of secret values alone, whose floor is 3 bytes: a shorter one was
// printed. It is masked now where it stands as a word of its own, as in what Nomad says
// (nomad.MaskWords), whatever its length; inside a longer word it is kept.
func TestNomadShortPlainUserIsScrubbedFromCrashReports(t *testing.T) {
	for _, user := range []string{"q7", "Z"} {
		t.Setenv("NOMAD_TOKEN", "")
		t.Setenv("NOMAD_HTTP_AUTH", "")
		t.Setenv("NOMAD_ADDR", "http://"+user+"@127.0.0.1:1")
		if _, err := connectNomad(nomadClient); err != nil {
			t.Fatal(err)
		}
		report := "panic: request to http://" + user + "@127.0.0.1:1/v1/volumes failed: user " + user + " refused\n" +
			"goroutine 1 [running]:\nmain.main()\n\t/src/cmd/volctl/main.go:12 +0x1d\n"
		got := scrubInputs(report)
		for _, w := range []string{"//" + user + "@", "user " + user + " "} {
			if strings.Contains(got, w) {
				t.Errorf("user %q: the crash report prints %q:\n%s", user, w, got)
			}
		}
		// Honest text: the stack and the words around the user are kept.
		for _, kept := range []string{"panic: request to http://[REDACTED]@127.0.0.1:1/v1/volumes failed: user [REDACTED] refused", "main.go:12 +0x1d"} {
			if !strings.Contains(got, kept) {
				t.Errorf("user %q: the crash report lost %q:\n%s", user, kept, got)
			}
		}
	}
}
