package nomad

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// NOMAD_ADDR with a fragment (http://nomad:4646/#x, a bookmark's, a token pasted after a '#'):
// the nomad CLI takes it (its API client parses the address and sends its scheme, user, host
// and port only), and volctl refused it, so a command that works with `nomad` failed with
// volctl under the same environment. It is taken: the requests go to the host written,
// carrying nothing of the fragment, and the address is shown with the fragment as xxxxx. A
// '#' before an '@' (a password's, or an '@' in the fragment) is still refused
// (TestNomadAddressReadAsAnotherHostIsRefused).
func TestNomadAddressFragmentIsTakenAsNomadsCLITakesIt(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.String())
		mu.Unlock()
		w.Header().Set("X-Nomad-Index", "3")
		io := `{"ID":"p","Provider":"hostpath.csi.volctl.dev","NodesHealthy":1,"NodesExpected":1}`
		w.Write([]byte(io))
	}))
	t.Cleanup(srv.Close)
	for addr, shown := range map[string]string{
		srv.URL + "/#s3cret":              srv.URL + "/#xxxxx",
		srv.URL + "#s3cret":               srv.URL + "#xxxxx",
		srv.URL + "/?token=s3cret#s3cret": srv.URL + "/?token=xxxxx#xxxxx",
		strings.Replace(srv.URL, "http://", "http://ops:pw-s3cret@", 1) + "/#s3cret": strings.Replace(srv.URL, "http://", "http://ops:xxxxx@", 1) + "/#xxxxx",
	} {
		c, err := NewClient(addr)
		if err != nil {
			t.Errorf("NOMAD_ADDR=%s is refused: %v", addr, err)
			continue
		}
		if c.Address != shown {
			t.Errorf("NOMAD_ADDR=%s is shown as %s, want %s", addr, c.Address, shown)
		}
		if _, err := c.Plugin(context.Background(), "p"); err != nil {
			t.Errorf("NOMAD_ADDR=%s: %v", addr, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 4 {
		t.Fatalf("asked %q, want one request per address", asked)
	}
	for _, u := range asked {
		if u != "/v1/plugin/csi/p" {
			t.Errorf("a request went as %q, want the plugin's path alone", u)
		}
	}
}
