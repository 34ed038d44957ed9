package nomad

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A proxy password with '@' and ':' written percent-encoded in HTTP_PROXY given without a
// scheme; the 407 page echoes it decoded, base64 and percent-encoded, and the user.
func TestNomadProxyPasswordEncodedIsNotShown(t *testing.T) {
	const password = "p@ss:w0rd-9e1d/x"
	shown, child := proxiedError(t, func(proxy string) string {
		return url.UserPassword("puser", password).String() + "@" + strings.TrimPrefix(proxy, "http://")
	}, func(r *http.Request) string {
		pa := r.Header.Get("Proxy-Authorization")
		decoded, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(pa, "Basic "))
		return "407: " + pa + " (" + string(decoded) + ") " + url.QueryEscape(string(decoded)) + " " + url.PathEscape(password)
	})
	if !child && strings.Contains(shown, "w0rd-9e1d") {
		t.Errorf("the error shows the proxy's password: %s", shown)
	}
}
