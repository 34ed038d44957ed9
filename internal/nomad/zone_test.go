package nomad

import (
	"strings"
	"testing"
)

// NOMAD_ADDR with an IPv6 link-local address and its zone as `ip address` prints it
// (http://[fe80::1%eth0]:4646): url.Parse cannot read the bare "%", and volctl said to
// percent-encode a '#', '/', '?' or '@' in a password, which there is none of. It says that
// a URL writes the zone after %25, with the address so written; a password in the address is
// not shown. Written so, the address is taken.
func TestNomadAddressWithABareIPv6ZoneIsNamed(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	for addr, want := range map[string]string{
		"http://[fe80::1%eth0]:4646":               "NOMAD_ADDR=http://[fe80::1%25eth0]:4646",
		"https://ops:s3cret-pw@[fe80::1%en0]:4646": "NOMAD_ADDR=https://xxxxx@[fe80::1%25en0]:4646 (with your user and password in place of xxxxx)",
		"http://[fe80::abcd:1%wlp2s0]/":            "NOMAD_ADDR=http://[fe80::abcd:1%25wlp2s0]/",
	} {
		_, err := NewClient(addr)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "%25") || strings.Contains(err.Error(), "in a password") {
			t.Errorf("NOMAD_ADDR=%s: want an error saying %q, got: %v", addr, want, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NOMAD_ADDR=%s: the error shows the password: %v", addr, err)
		}
	}
	if _, err := NewClient("http://[fe80::1%25eth0]:4646"); err != nil {
		t.Errorf("the zone written after %%25: %v", err)
	}
}

// NOMAD_ADDR with a password holding an unescaped '#', '/' or '?' after digits
// (http://ops:1234#5678@nomad:4646): url.Parse reads host "ops:1234" (the digits its port)
// and the rest as a fragment, path or query, so volctl showed the address meant
// (http://xxxxx@nomad:4646) while every request, NOMAD_TOKEN with it, went to host "ops". It
// is refused with the '#', '/', '?', '@' advice, the password not shown; so is the "fixed"
// address the bare-zone advice gave for such a password (review32g), whose host was "ops"
// too.
func TestNomadAddressReadAsAnotherHostIsRefused(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	for _, addr := range []string{
		"http://ops:1234#5678@nomad.example:4646",
		"http://ops:1234/5678@nomad.example:4646",
		"http://ops:1234?5678@nomad.example:4646",
		"http://ops:1234#5678@[fe80::1%eth0]:4646",
		"http://ops:1234#5678@[fe80::1%25eth0]:4646",
		"http://ops:1234/5678@[fe80::1%25eth0]:4646",
		// An '@' in a fragment: the address shown (everything before its last '@' hidden)
		// would name another host than the one asked. (http://nomad.example:4646/#frag, whose
		// requests go to the host written, is taken since round 36, as the nomad CLI takes
		// it: TestNomadAddressFragmentIsTakenAsNomadsCLITakesIt.)
		"http://nomad.example:4646/#frag@other.example",
	} {
		c, err := NewClient(addr)
		if err == nil {
			t.Errorf("NOMAD_ADDR=%s is taken, as Nomad at %s, though its requests go to another host", addr, c.Address)
			continue
		}
		if !strings.Contains(err.Error(), "%23") {
			t.Errorf("NOMAD_ADDR=%s: the error does not say a '#' in a password is written %%23: %v", addr, err)
		}
		if strings.Contains(err.Error(), "1234") || strings.Contains(err.Error(), "5678") {
			t.Errorf("NOMAD_ADDR=%s: the error shows the password: %v", addr, err)
		}
	}
	for _, addr := range []string{"http://ops:1234%235678@nomad.example:4646", "http://ops:pw@[fe80::1%25eth0]:4646/", "unix:///run/nomad@1.sock"} {
		if _, err := NewClient(addr); err != nil {
			t.Errorf("NOMAD_ADDR=%s, written as a URL writes it: %v", addr, err)
		}
	}
}
