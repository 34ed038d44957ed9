package nomad

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A proxy password with '@' and ':' written percent-encoded in HTTP_PROXY given without a
// scheme; the 407 page echoes it decoded, base64 and percent-encoded, and the user.
func TestNomadProxyPasswordEncodedIsNotShown(t *testing.T) {
	const password = "p@ss:w0rd-9e1d/x"
	if os.Getenv("VOLCTL_TEST_PROXY_CHILD") != "" {
		c, err := NewClient("http://nomad.example.com:4646")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Plugin(context.Background(), "hp")
		if err == nil {
			t.Fatal("no error")
		}
		os.Stdout.WriteString("\nERROR: " + err.Error() + "\n")
		return
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pa := r.Header.Get("Proxy-Authorization")
		decoded, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(pa, "Basic "))
		http.Error(w, "407: "+pa+" ("+string(decoded)+") "+url.QueryEscape(string(decoded))+" "+url.PathEscape(password), http.StatusProxyAuthRequired)
	}))
	t.Cleanup(proxy.Close)
	cmd := exec.Command(os.Args[0], "-test.run=^TestNomadProxyPasswordEncodedIsNotShown$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "VOLCTL_TEST_PROXY_CHILD=1", "NOMAD_TOKEN=", "NOMAD_HTTP_AUTH=",
		"HTTP_PROXY="+url.UserPassword("puser", password).String()+"@"+strings.TrimPrefix(proxy.URL, "http://"), "http_proxy=", "NO_PROXY=", "no_proxy=")
	out, _ := cmd.CombinedOutput()
	_, shown, ok := strings.Cut(string(out), "\nERROR: ")
	t.Logf("%s", out)
	if !ok || !strings.Contains(shown, "407") {
		t.Fatalf("the child did not meet the proxy's 407:\n%s", out)
	}
	if strings.Contains(shown, "w0rd-9e1d") {
		t.Errorf("the error shows the proxy's password: %s", shown)
	}
}
