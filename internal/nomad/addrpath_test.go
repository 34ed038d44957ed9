package nomad

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// NOMAD_ADDR with a secret where recheck33b's hiding (a query's values) did not look: a query
// key that is itself the token (?TOKEN=, or ?TOKEN), a path segment (https://gw/v1/TOKEN/, as
// a gateway that routes by key takes one), text after the port (;TOKEN, \TOKEN) that url.Parse
// refuses. Each was shown as written in every "Nomad at" error, nomad status, advice and the
// handover mark. Nomad's API client sends none of it (only the scheme, user, host and port),
// so hiding it costs a request nothing: a query key or path segment is shown only when it is
// a plain word (region, token, nomad, v1), else as xxxxx, and stray text after the host as
// xxxxx. What answers echoes the request's URL and headers: the secret is in neither.
func TestNomadAddressKeyOrPathSecretIsNotShown(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	const secret = "s3cretTOKEN9"
	srv := refusing(t, func(r *http.Request) string {
		return "Permission denied for " + r.URL.String() + " " + r.Header.Get("Authorization")
	})
	for addr, want := range map[string]string{
		srv.URL + "/?" + secret + "=":                                             srv.URL + "/?xxxxx",
		srv.URL + "/?region=global&" + secret + "=&namespace=":                    srv.URL + "/?region=xxxxx&xxxxx&namespace=",
		srv.URL + "/?" + secret:                                                   srv.URL + "/?xxxxx",
		srv.URL + "/v1/" + secret + "/":                                           srv.URL + "/v1/xxxxx/",
		srv.URL + "/nomad/" + secret:                                              srv.URL + "/nomad/xxxxx",
		srv.URL + "/%73" + secret[1:] + "/":                                       srv.URL + "/xxxxx/",
		srv.URL + "/" + secret + ":x/?t=1":                                        srv.URL + "/xxxxx/?t=xxxxx",
		strings.Replace(srv.URL, "http://", "http://ops:pw-9@", 1) + "/" + secret: strings.Replace(srv.URL, "http://", "http://ops:xxxxx@", 1) + "/xxxxx",
	} {
		if got := engine.ShownNomadAddress(addr); got != strings.Replace(want, "ops:xxxxx@", "xxxxx@", 1) {
			t.Errorf("a mark's address %s is shown as %s", addr, got)
		}
		c, err := NewClient(addr)
		if err != nil {
			t.Errorf("NOMAD_ADDR=%s: %v", addr, err)
			continue
		}
		if c.Address != want {
			t.Errorf("NOMAD_ADDR=%s is shown as %s, want %s", addr, c.Address, want)
		}
		_, err = c.PluginsOfDriver(context.Background(), "hostpath.csi.volctl.dev")
		if err == nil || !strings.Contains(err.Error(), "Nomad at "+want) || strings.Contains(err.Error(), secret[1:]) {
			t.Errorf("NOMAD_ADDR=%s: the error names the address otherwise than %s: %v", addr, want, err)
		}
	}
	for _, u := range srv.asked() {
		if strings.Contains(u, secret[1:]) || !strings.HasPrefix(u, "/v1/plugins") {
			t.Errorf("Nomad was asked %s: the address's path or query sent", u)
		}
	}
	// Refused as no URL, the secret after the port is not shown either.
	for _, addr := range []string{srv.URL + ";" + secret, srv.URL + `\` + secret, srv.URL + ";token=" + secret} {
		if _, err := NewClient(addr); err == nil || strings.Contains(err.Error(), secret[1:]) || !strings.Contains(err.Error(), srv.URL) {
			t.Errorf("NOMAD_ADDR=%s: %v; want it refused, naming the host, not the secret", addr, err)
		}
	}
	// Honest addresses: Nomad's own query parameters, plain path words, and a unix socket's
	// path (a task's, under its alloc's ID) are taken and shown with their words.
	for addr, want := range map[string]string{
		srv.URL + "/?region=global":       srv.URL + "/?region=xxxxx",
		srv.URL + "?namespace=team&stale": srv.URL + "?namespace=xxxxx&xxxxx",
		srv.URL + "/nomad/v1/":            srv.URL + "/nomad/v1/",
		"https://gw.example/nomad-api/":   "https://gw.example/nomad-api/",
		"unix:///var/nomad/alloc/6a1f0e2b-8c3d-4e5f-9a0b-1c2d3e4f5a6b/web/secrets/api.sock": "unix:///var/nomad/alloc/6a1f0e2b-8c3d-4e5f-9a0b-1c2d3e4f5a6b/web/secrets/api.sock",
	} {
		c, err := NewClient(addr)
		if err != nil || c.Address != want {
			t.Errorf("NOMAD_ADDR=%s: %v, shown as %v, want %s", addr, err, c, want)
		}
	}
}

// adviced is the value of the last NOMAD_ADDR=VALUE in msg, as sh gives it: the advice must
// paste as printed.
func advisedAddr(t *testing.T, msg string) string {
	t.Helper()
	i := strings.LastIndex(msg, "NOMAD_ADDR=")
	if i < 0 {
		t.Fatalf("no NOMAD_ADDR= advised in %q", msg)
	}
	word, quoted := []rune{}, false
	for _, r := range msg[i:] {
		if r == '\'' {
			quoted = !quoted
		}
		if r == ' ' && !quoted {
			break
		}
		word = append(word, r)
	}
	out, err := exec.Command("sh", "-c", string(word)+` ; printf %s "$NOMAD_ADDR"`).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", string(word), err)
	}
	return string(out)
}

// NOMAD_ADDR=https://h:4646/#token (a fragment, with no '@' after it to make it part of a
// password) was refused with advice about the characters of a password, which it has none
// of; since round 36 it is taken, as the nomad CLI takes it (TestNomadAddressFragmentIsTakenAsNomadsCLITakesIt),
// and only a fragment url.Parse cannot read (#%zz) is refused: the error names the fragment
// and gives the address without it, pasteable; the fragment is not shown. The advice for an
// address with a query (the scheme's slashes, an IPv6 zone)
// spoke of "your user and password": it gives the address without its query, which Nomad's
// API client never sends, and says so; quoted for a shell (a '&' in a query, a '[' of an IPv6
// host).
func TestNomadAddressFragmentAndQueryAdviceNameThem(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	for _, tc := range []struct{ addr, want, says, notSays string }{
		{"http://nomad.example:4646/#s3cret%zz", "http://nomad.example:4646/", "fragment", "in a password"},
		{"https://nomad.example#s3cret%zz", "https://nomad.example", "fragment", "in a password"},
		{"http://ops:s3cret@nomad.example:4646/#s3cret%zz", "http://xxxxx@nomad.example:4646/", "fragment", "in a password"},
		{"http://nomad.example:4646/?token=s3cret#s3cret%zz", "http://nomad.example:4646/", "fragment", "in a password"},
		{"http:nomad.example:4646/?token=s3cret", "http://nomad.example:4646/", "query", "user and password"},
		{"http:nomad.example:4646/?region=global&token=s3cret", "http://nomad.example:4646/", "query", "user and password"},
		{"http://[fe80::1%eth0]:4646/?token=s3cret", "http://[fe80::1%25eth0]:4646/", "query", "user and password"},
		{"http://[fe80::1%eth0]:4646", "http://[fe80::1%25eth0]:4646", "%25", "query"},
	} {
		_, err := NewClient(tc.addr)
		if err == nil {
			t.Errorf("NOMAD_ADDR=%s is taken", tc.addr)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.says) || strings.Contains(msg, tc.notSays) || strings.Contains(msg, "s3cret") {
			t.Errorf("NOMAD_ADDR=%s: %v\nwant it to speak of %q, not %q, without the secret", tc.addr, err, tc.says, tc.notSays)
		}
		if got := advisedAddr(t, msg); got != tc.want {
			t.Errorf("NOMAD_ADDR=%s: the advice pastes as NOMAD_ADDR=%s, want %s (%v)", tc.addr, got, tc.want, err)
		}
	}
	// The advice taken as printed is taken, but for a user and password to put back.
	for _, addr := range []string{"http://nomad.example:4646/", "https://nomad.example", "http://[fe80::1%25eth0]:4646/"} {
		if _, err := NewClient(addr); err != nil {
			t.Errorf("NOMAD_ADDR=%s, as advised: %v", addr, err)
		}
	}
}
