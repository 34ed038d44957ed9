package nomad

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// PluginsOfDriver, asked for the plugin IDs Nomad runs a volume's driver under (register's
// advice to make volctl's plugin ID and Nomad's agree), took any 200 list as Nomad's: a
// proxy's or another server's answer, without Nomad's X-Nomad-Index header, had its IDs
// named as the plugins Nomad runs. And a failure that stops every other request (Nomad
// refusing the token as expired) was not noted for the command, as Plugin's is: the command
// went on asking Nomad for each volume. Both are now as Plugin does (fromNomad, noteStopped).
func TestPluginsOfDriverTakesOnlyNomadsAnswer(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	list := `[{"ID":"hostpath","Provider":"hostpath.csi.volctl.dev","NodesHealthy":1}]`
	for _, tt := range []struct {
		name   string
		header bool
		status int
		body   string
		want   []string
		stops  bool
	}{
		{name: "Nomad's list", header: true, status: http.StatusOK, body: list, want: []string{"hostpath"}},
		{name: "a list without X-Nomad-Index", status: http.StatusOK, body: list},
		{name: "an expired token", header: true, status: http.StatusForbidden, body: "ACL token expired", stops: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header {
					w.Header().Set("X-Nomad-Index", "7")
				}
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			c, err := NewClient(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := c.PluginsOfDriver(context.Background(), "hostpath.csi.volctl.dev")
			if tt.want != nil {
				if err != nil || strings.Join(ids, ",") != strings.Join(tt.want, ",") {
					t.Fatalf("got %v, %v; want %v", ids, err, tt.want)
				}
				return
			}
			if err == nil || len(ids) > 0 {
				t.Errorf("got %v, %v: an answer that is not Nomad's list taken as its plugins", ids, err)
			}
			if stopped := c.Stopped() != nil; stopped != tt.stops {
				t.Errorf("the command stopped asking Nomad: %v, want %v (%v)", stopped, tt.stops, c.Stopped())
			}
		})
	}
}
