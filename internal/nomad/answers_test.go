package nomad

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// policyRefuses answers as Nomad does a token it has whose policy grants nothing: its own
// token (GET /v1/acl/token/self), and 403 "Permission denied" to every other request.
func policyRefuses(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/acl/token/self" && r.Header.Get("X-Nomad-Token") != "" {
		fmt.Fprint(w, `{"AccessorID":"a","Type":"client","Policies":["none"]}`)
		return
	}
	http.Error(w, "Permission denied", http.StatusForbidden)
}

// A token Nomad refuses (403 Permission denied): the error names the ACL capability the
// request needs, in the namespace it was made in, and NOMAD_TOKEN, not just "Permission
// denied".
func TestNomadPermissionDeniedNamesTheCapability(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(policyRefuses))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.Plugin(ctx, "hp")
	check := func(what string, err error, want ...string) {
		t.Helper()
		for _, w := range append(want, "403: Permission denied", "NOMAD_TOKEN") {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s refused: %v\nwant it to say %q", what, err, w)
			}
		}
	}
	check("plugin read", err, `"plugin" policy "read"`)
	_, err = c.VolumeIn(ctx, "db", "team", "")
	check("volume read", err, "csi-read-volume", "namespace team")
	_, _, err = c.register(ctx, spec.Volume{ID: "db", Namespace: "team", PluginID: "hp"})
	check("registration", err, "csi-write-volume", "namespace team", `"plugin" policy "read"`)
}

// Something at NOMAD_ADDR that answers 200 with what is not Nomad's JSON (a web page, a
// proxy's login form): the error says so and names NOMAD_ADDR, not "is Nomad running there?"
// about something that answered.
func TestNomadAnswerNotJSONIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html><body>Please log in</body></html>")
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Plugin(context.Background(), "hp")
	for _, w := range []string{"not Nomad's JSON", "NOMAD_ADDR"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("plugin read answered with a web page: %v\nwant it to say %q", err, w)
		}
	}
	if err != nil && strings.Contains(err.Error(), "is Nomad running there?") {
		t.Errorf("plugin read answered with a web page: %v\nasks whether Nomad runs, about something that answered", err)
	}
}

// Nomad answers 403 "Permission denied" alike to a request without a token, with a token it
// does not know, and with one that expired (a token with a TTL may expire between two requests
// of one command): the error says which applies, not only that NOMAD_TOKEN's policy must grant
// the capability, which is no remedy when NOMAD_TOKEN is unset or the token has expired.
func TestNomadPermissionDeniedSaysWhatOfTheToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(policyRefuses))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		token string
		want  []string
	}{
		{"", []string{"NOMAD_TOKEN is not set", "anonymous", "csi-read-volume in namespace team"}},
		{"0b9bd8e6-52d4-4d1c-b4a2-6e9cb0dd0f0e", []string{"NOMAD_TOKEN's ACL policy must grant csi-read-volume in namespace team", "expired", "nomad acl token self"}},
	} {
		t.Setenv("NOMAD_TOKEN", tc.token)
		c, err := NewClient(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.VolumeIn(context.Background(), "db", "team", "")
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("volume read refused, NOMAD_TOKEN %q: %v\nwant it to say %q", tc.token, err, w)
			}
		}
		if tc.token != "" && strings.Contains(err.Error(), tc.token) {
			t.Errorf("the error shows the token: %v", err)
		}
	}
}

// With ACLs, Nomad answers a request in a namespace it does not have 403 to a token whose policy
// names no glob matching it, as it answers one the policy does not grant: NOMAD_NAMESPACE
// misspelt (nosuch) read as a policy to widen. The error names NOMAD_NAMESPACE as where the
// namespace came from, and says how to tell whether it exists (against Nomad 2.0.5:
// TestNomadWithACLsAndTLS).
func TestNomadPermissionDeniedInANamespaceNamesWhereItCameFrom(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(policyRefuses))
	t.Cleanup(srv.Close)
	t.Setenv("NOMAD_TOKEN", "0b9bd8e6-52d4-4d1c-b4a2-6e9cb0dd0f0e")
	t.Setenv("NOMAD_NAMESPACE", "nosuch")
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v := spec.Volume{ID: "db", Namespace: "default", PluginID: "hp"}
	_, err = c.Volume(ctx, "db", v.Namespace)
	_, _, rerr := c.register(ctx, v)
	for what, err := range map[string]error{"volume read": err, "registration": rerr} {
		for _, w := range []string{"in namespace nosuch, which NOMAD_NAMESPACE names", `no namespace "nosuch"`, "`nomad namespace status nosuch`"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s refused in NOMAD_NAMESPACE's namespace: %v\nwant it to say %q", what, err, w)
			}
		}
	}
	if !strings.Contains(rerr.Error(), `"plugin" policy "read"`) {
		t.Errorf("registration refused: %v\nwant it to name plugin read too", rerr)
	}
	// A namespace the volume's spec names is not said to be NOMAD_NAMESPACE's.
	_, err = c.VolumeIn(ctx, "db", "team", "")
	if err == nil || strings.Contains(err.Error(), "NOMAD_NAMESPACE") || !strings.Contains(err.Error(), `no namespace "team"`) {
		t.Errorf("volume read refused in the spec's namespace team: %v\nwant it to say Nomad may have no namespace team, and not name NOMAD_NAMESPACE", err)
	}
}

// A region Nomad does not know (NOMAD_REGION misspelt, or the region a volume was handed over
// in gone from the federation): Nomad answers 500 "No path to region"; the error names the
// region asked for and where it came from, not only Nomad's words.
func TestNomadUnknownRegionIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "No path to region", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("NOMAD_REGION", "mars")
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Plugin(context.Background(), "hp")
	for _, w := range []string{"No path to region", `region "mars"`, "NOMAD_REGION"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("plugin read in an unknown region: %v\nwant it to say %q", err, w)
		}
	}
	_, err = c.VolumeIn(context.Background(), "db", "default", "venus")
	for _, w := range []string{"No path to region", `region "venus"`, "handed over"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("volume read in the region of its handover, unknown: %v\nwant it to say %q", err, w)
		}
	}
}

// Something at NOMAD_ADDR that answers a plugin's or a volume's read 200 with JSON null: no
// panic (the api module's plugin read returned a nil plugin for it, which volctl then read),
// and a plugin so answered is not healthy, a volume so answered not this one.
func TestNomadNullAnswerIsNotAPanic(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "1")
		io.WriteString(w, "null")
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.Plugin(context.Background(), "hp"); err == nil && p.Healthy() {
		t.Errorf("plugin read answered null: %+v, healthy", p)
	}
	if v, err := c.VolumeIn(context.Background(), "db", "default", ""); err == nil && len(c.Identity(v, spec.Volume{ID: "db", PluginID: "hp"})) == 0 {
		t.Errorf("volume read answered null: %+v, taken for volume db", v)
	}
}

// A namespace Nomad does not have (the spec's, or NOMAD_NAMESPACE's for a volume of the
// default one): Nomad refuses the registration with a 500 "volume ID is in nonexistent
// namespace NS". The error said only that; it names the namespace, where it came from, and
// the command that creates it.
func TestNomadNamespaceItLacksIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "volume db is in nonexistent namespace "+r.URL.Query().Get("namespace"), http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		env, spec string
		want      []string
	}{
		{"", "team", []string{"nonexistent namespace team", `no namespace "team"`, "the volume's spec names", "nomad namespace apply team"}},
		{"team", "default", []string{"nonexistent namespace team", `no namespace "team"`, "NOMAD_NAMESPACE names", "nomad namespace apply team"}},
		{"team", "", []string{"nonexistent namespace team", `no namespace "team"`, "NOMAD_NAMESPACE names", "nomad namespace apply team"}},
		{"team", "team", []string{"nonexistent namespace team", "the volume's spec names", "nomad namespace apply team"}},
	} {
		t.Setenv("NOMAD_NAMESPACE", tc.env)
		c, err := NewClient(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = c.register(context.Background(), spec.Volume{ID: "db", Namespace: tc.spec, PluginID: "hp", ExternalID: "vol-1",
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}})
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("NOMAD_NAMESPACE=%q, spec namespace %q: registration in a namespace Nomad lacks: %v\nwant it to say %q", tc.env, tc.spec, err, w)
			}
		}
	}
}

// A proxy before Nomad (or in its place at NOMAD_ADDR) answering an error with its own web page:
// the error names the page by its title and says what it means, without the page's markup,
// which said nothing a user could act on (nomad21 saw it shown raw, cut to 4 KiB).
func TestNomadErrorPageOfAProxyIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>\r\n<head><title>502 Bad\n Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Plugin(context.Background(), "hp")
	for _, w := range []string{`502: a web page titled "502 Bad Gateway", not Nomad's answer`, "NOMAD_ADDR"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("plugin read answered with a proxy's error page: %v\nwant it to say %q", err, w)
		}
	}
	if err != nil && strings.Contains(err.Error(), "<center>") {
		t.Errorf("plugin read answered with a proxy's error page: %v\nshows the page's markup", err)
	}
}

// Nomad 2.0.5 answers a deleted or unknown token a plain 403 "Permission denied" on its volume
// endpoints, as it answers a policy's refusal; GET /v1/acl/token/self refuses it too (403),
// which a token it has is never refused. The volume read's error says the token is gone, not
// that its policy must grant csi-read-volume, and token/self is asked once for the client and
// its copies.
func TestNomadPermissionDeniedOfAGoneTokenAsksTokenSelfOnce(t *testing.T) {
	var selves atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/acl/token/self" {
			selves.Add(1)
		}
		http.Error(w, "Permission denied", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("NOMAD_TOKEN", "0b9bd8e6-52d4-4d1c-b4a2-6e9cb0dd0f0e")
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"db", "v1"} {
		_, err = c.VolumeIn(context.Background(), id, "team", "")
		if err == nil || !strings.Contains(err.Error(), "does not know NOMAD_TOKEN's token") || strings.Contains(err.Error(), "policy must grant") {
			t.Errorf("volume %s read with a token Nomad does not know: %v\nwant it to say Nomad does not know the token, not blame its policy", id, err)
		}
	}
	if got := selves.Load(); got != 1 {
		t.Errorf("token/self asked %d times, want once", got)
	}
	if err := c.Stopped(); err == nil || !strings.Contains(err.Error(), "does not know NOMAD_TOKEN's token") {
		t.Errorf("Stopped after a gone token: %v, want it to say every other request would be refused so", err)
	}
}

// Not every refusal of token/self means the token is gone. Nomad 2.0.5 answers a workload
// identity (a task's NOMAD_TOKEN from `identity { env = true }`, a JWT, no ACL token) 404 "ACL
// token not found" there, and a proxy hardening Nomad's API may refuse /v1/acl/ with a 403 page
// of its own: in both the token is good and a 403 on a volume is its policy's. Before, either
// read as a gone token: the whole `register --all` or `status` stopped at one namespace's
// refusal, telling the user to replace a token that works.
func TestNomadTokenSelfOfAnIdentityOrAProxyIsNoGoneToken(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		body   string
	}{
		{"workload identity", http.StatusNotFound, "ACL token not found"},
		{"proxy refusing /v1/acl/", http.StatusForbidden, "<html><title>403 Forbidden</title></html>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/acl/token/self" {
					http.Error(w, tt.body, tt.status)
					return
				}
				http.Error(w, "Permission denied", http.StatusForbidden)
			}))
			t.Cleanup(srv.Close)
			t.Setenv("NOMAD_TOKEN", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
			c, err := NewClient(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.VolumeIn(context.Background(), "db", "team", "")
			if err == nil || strings.Contains(err.Error(), "does not know NOMAD_TOKEN's token") {
				t.Errorf("volume read refused by the token's policy, token/self answering %d %q: %v\nwant the policy's refusal, not a gone token", tt.status, tt.body, err)
			}
			if err := c.Stopped(); err != nil {
				t.Errorf("Stopped after one policy's refusal: %v, want nil: the other volumes are to be asked", err)
			}
		})
	}
}
