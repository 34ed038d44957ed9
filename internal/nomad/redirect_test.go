package nomad

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// What answers at NOMAD_ADDR redirects with a Location Go cannot parse (a login page's, which
// quotes what the request carried, the ACL token included). Go's client fails before it asks
// volctl whether to follow, with its own words quoting the Location: the token was printed as
// it is, the error said "is Nomad running there?" of what had answered, and a registration so
// answered was taken for one Nomad may have received and kept marked, unsettled. Now it is the
// redirect volctl does not follow, as any other: the token replaced, refused for certain.
func TestNomadRedirectToALocationGoCannotParseIsARedirect(t *testing.T) {
	const token = "acl-token-9f8e7d6c"
	t.Setenv("NOMAD_TOKEN", token)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://[::1%zz/login?t="+r.Header.Get("X-Nomad-Token"))
		w.WriteHeader(http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "redirect to") || !strings.Contains(err.Error(), "does not follow") ||
			strings.Contains(err.Error(), "is Nomad running there") {
			t.Errorf("%s, redirected to a Location Go cannot parse: %v\nwant the redirect named, without the token", what, err)
		}
	}
	err = askEach(c, check)
	if !errors.Is(err, ErrRefused) {
		t.Errorf("registration answered with a redirect: %v\nwant it refused for certain (the request went no further)", err)
	}
}
