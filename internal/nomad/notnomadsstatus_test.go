package nomad

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A status Nomad's HTTP API never answers on the endpoints volctl asks (Nomad 2.0.5's answer
// errors with 400, 403, 404, 405, 429 and 500: its wrap and errCodeFromHandler; a 409 only on
// its variables' endpoint), given by what stands before it: an auth proxy's 401, a forward
// proxy's 407, a gateway's 409, 412 or 413. Before, it was shown as Nomad's ("Nomad at ...
// refused the registration: 409: Conflict"), sending the user to Nomad's logs, which have
// nothing. Now the error says Nomad answers no such status, so something else at NOMAD_ADDR
// did, and what to change for those whose cause is known; a 401, which Nomad answers on its
// Task API to a request without a token, says that and the proxy's case.
func TestNomadStatusNomadNeverAnswersIsNamed(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   []string
	}{
		{http.StatusUnauthorized, []string{"Task API", "NOMAD_TOKEN", "NOMAD_HTTP_AUTH"}},
		{http.StatusProxyAuthRequired, []string{"Nomad's API answers no 407", "HTTPS_PROXY"}},
		{http.StatusConflict, []string{"Nomad's API answers no 409", "NOMAD_ADDR must name Nomad's API"}},
		{http.StatusPreconditionFailed, []string{"Nomad's API answers no 412", "NOMAD_ADDR must name Nomad's API"}},
		{http.StatusRequestEntityTooLarge, []string{"Nomad's API answers no 413", "body size"}},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, http.StatusText(tc.status), tc.status)
			}))
			t.Cleanup(srv.Close)
			c, err := NewClient(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error) {
				t.Helper()
				for _, w := range append([]string{fmt.Sprintf("%d: %s", tc.status, http.StatusText(tc.status)), srv.URL}, tc.want...) {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("%s answered %d: %v\nwant it to say %q", what, tc.status, err, w)
					}
				}
			}
			err = askEach(c, check)
			// Refused for certain, as any 4xx: what stands before Nomad refused it.
			if !errors.Is(err, ErrRefused) {
				t.Errorf("registration answered %d: %v\nwant it refused", tc.status, err)
			}
		})
	}
}

// askEach asks c for plugin hp and volume db, then registers db, checking each request's error
// with check; it returns the registration's.
func askEach(c *Client, check func(what string, err error)) error {
	_, err := c.Plugin(context.Background(), "hp")
	check("plugin read", err)
	_, err = c.VolumeIn(context.Background(), "db", "default", "")
	check("volume read", err)
	_, _, err = c.register(context.Background(), spec.Volume{ID: "db", PluginID: "hp", ExternalID: "x"})
	check("registration", err)
	return err
}
