package nomad

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// A secret made of lower-case letters alone (a password a person chose, a gateway's word):
// round 34 showed any lower-case word after the host as a "plain word", so
// NOMAD_ADDR=http://gw:4646/opensesame/?opensesame= was shown as written in every "Nomad at"
// error, nomad status, advice, the mark and the events. What is shown now is a fixed set of
// words (Nomad's query parameters, a gateway's prefix and credential keys, v1, a key of one
// or two letters); anything else is xxxxx, an honest /cluster1/ or /prod/ included: the path
// and query are never sent, so hiding them costs a request nothing, and the host and port
// still say which Nomad it is.
func TestNomadAddressWordSecretIsShownNowhere(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	const secret = "opensesame"
	srv := refusing(t, func(r *http.Request) string { return "Permission denied for " + r.URL.String() })
	for addr, want := range map[string]string{
		srv.URL + "/?" + secret + "=":                       srv.URL + "/?xxxxx",
		srv.URL + "/?" + secret + "=1&region=global":        srv.URL + "/?xxxxx&region=xxxxx",
		srv.URL + "/" + secret + "/":                        srv.URL + "/xxxxx/",
		srv.URL + "/nomad/" + secret + "/v1/":               srv.URL + "/nomad/xxxxx/v1/",
		srv.URL + "/open-sesame/?open_sesame":               srv.URL + "/xxxxx/?xxxxx",
		srv.URL + "/v" + strings.Repeat("7", 9) + "/":       srv.URL + "/xxxxx/", // digits after a v: no API version
		srv.URL + "/cluster1/?token=" + secret + "&stale=1": srv.URL + "/xxxxx/?token=xxxxx&stale=xxxxx",
	} {
		if got := engine.ShownNomadAddress(addr); got != want {
			t.Errorf("a mark's address %s is shown as %s, want %s", addr, got, want)
		}
		if got := engine.ShownNomadAddress(want); got != want {
			t.Errorf("an address shown as %s is shown again as %s", want, got)
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
		if err == nil || !strings.Contains(err.Error(), "Nomad at "+want) || strings.Contains(err.Error(), secret) {
			t.Errorf("NOMAD_ADDR=%s: the error names the address otherwise than %s: %v", addr, want, err)
		}
	}
	// Honest addresses keep their words.
	for _, addr := range []string{
		srv.URL + "/nomad-api/v1/?region=xxxxx&namespace=xxxxx",
		"https://gw.example/api/nomad/?access_token=xxxxx&t=xxxxx",
		"https://gw.example/ui/",
		"unix:///run/opensesame/api.sock",
	} {
		if got := engine.ShownNomadAddress(addr); got != addr {
			t.Errorf("an honest address %s is shown as %s", addr, got)
		}
	}
}
