package nomad

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// NOMAD_ADDR with a token in its query (http://nomad:4646/?token=SECRET, as some gateways
// take one): the address was shown as it is wherever volctl names it (every "Nomad at ..."
// error, nomad status, advice, the handover mark it records), though Nomad's API client sends
// no query (nor path) and the token reached no one. Each query value, and a fragment, is
// shown as xxxxx, the keys kept (engine.HiddenNomadPathAndQuery); the requests still go to the host
// written. An address with no query (https with a port, an IPv6 literal, a path prefix) is
// shown as it was.
func TestNomadAddressQueryIsNotShown(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	const secret = "s3cr3t-qu3ry-t0ken"
	srv := refusing(t, nil)
	for addr, want := range map[string]string{
		srv.URL + "/?token=" + secret:                     srv.URL + "/?token=xxxxx",
		srv.URL + "?region=global&token=" + secret + "&x": srv.URL + "?region=xxxxx&token=xxxxx&xxxxx",
		srv.URL + "/?" + secret:                           srv.URL + "/?xxxxx",
		strings.Replace(srv.URL, "http://", "http://ops:"+secret+"@", 1) + "/?t=" + secret: strings.Replace(srv.URL, "http://", "http://ops:xxxxx@", 1) + "/?t=xxxxx",
	} {
		c, err := NewClient(addr)
		if err != nil {
			t.Errorf("NOMAD_ADDR=%s: %v", addr, err)
			continue
		}
		if c.Address != want {
			t.Errorf("NOMAD_ADDR=%s is shown as %s, want %s", addr, c.Address, want)
		}
		_, err = c.PluginsOfDriver(context.Background(), "hostpath.csi.volctl.dev")
		if err == nil || !strings.Contains(err.Error(), "Nomad at "+want) || strings.Contains(err.Error(), secret) {
			t.Errorf("NOMAD_ADDR=%s: the error names the address otherwise than %s: %v", addr, want, err)
		}
	}
	asked := srv.asked()
	for _, u := range asked {
		if strings.Contains(u, secret) || !strings.HasPrefix(u, "/v1/plugins") {
			t.Errorf("Nomad was asked %s: the address's path or query sent", u)
		}
	}
	if len(asked) == 0 {
		t.Error("no request reached the address's host")
	}
	// Named where it is refused for stray text, and in a mark an older volctl recorded.
	if _, err := NewClient("http://nomad.example:4646/?token=" + secret + " "); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("an address with a blank after its query: %v", err)
	}
	if got := engine.ShownNomadAddress("http://nomad.example:4646/?token=" + secret + "#" + secret); got != "http://nomad.example:4646/?token=xxxxx#xxxxx" {
		t.Errorf("an old mark's address is shown as %s", got)
	}
	// Honest addresses, shown as written.
	for _, addr := range []string{"https://nomad.example:4646", "http://[fe80::1%25eth0]:4646", "https://gw.example/nomad/", "http://[::1]:4646/", "unix:///run/nomad/api.sock", "http://nomad.example:4646?"} {
		c, err := NewClient(addr)
		if err != nil || c.Address != addr {
			t.Errorf("NOMAD_ADDR=%s: %v, shown as %v", addr, err, c)
		}
		if got := engine.ShownNomadAddress(addr); got != addr {
			t.Errorf("a mark's address %s is shown as %s", addr, got)
		}
	}
}
