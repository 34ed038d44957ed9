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
