package nomad

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// HTTPS_PROXY in the environment, as the nomad CLI honours it (the api module's transport
// proxies from the environment): an https Nomad is reached through the proxy's CONNECT
// tunnel, so the proxy never sees the ACL token, which goes to Nomad inside TLS. The client
// runs in a child process, since Go reads the proxy variables once per process.
func TestNomadTokenIsNotShownToAnHTTPSProxy(t *testing.T) {
	const token = "acl-token-0b7e-proxy"
	if os.Getenv("VOLCTL_TEST_PROXY_CHILD") != "" {
		c, err := NewClient("https://example.com") // httptest's certificate is for example.com
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Plugin(context.Background(), "hp"); err != nil {
			t.Fatal(err)
		}
		return
	}
	var (
		mu      sync.Mutex
		tokens  []string // what Nomad got
		proxied []string // what the proxy saw: request lines and headers
	)
	nomad := quietTLS(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.Header.Get("X-Nomad-Token"))
		mu.Unlock()
		w.Header().Set("X-Nomad-Index", "1")
		io.WriteString(w, `{"ID":"hp","NodesHealthy":1}`)
	}))
	t.Cleanup(nomad.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // a CONNECT proxy that tunnels every target to the fake Nomad
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				var b strings.Builder
				req.Header.Write(&b)
				mu.Lock()
				proxied = append(proxied, req.Method+" "+req.Host+"\n"+b.String())
				mu.Unlock()
				if req.Method != http.MethodConnect {
					io.WriteString(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
					return
				}
				up, err := net.Dial("tcp", nomad.Listener.Addr().String())
				if err != nil {
					return
				}
				defer up.Close()
				io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
				go io.Copy(up, br)
				io.Copy(conn, up)
			}()
		}
	}()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: nomad.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNomadTokenIsNotShownToAnHTTPSProxy$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VOLCTL_TEST_PROXY_CHILD=1", "NOMAD_TOKEN="+token, "NOMAD_CACERT="+ca,
		"HTTPS_PROXY=http://"+ln.Addr().String(), "https_proxy=", "NO_PROXY=", "no_proxy=",
		"NOMAD_CAPATH=", "NOMAD_CLIENT_CERT=", "NOMAD_CLIENT_KEY=", "NOMAD_TLS_SERVER_NAME=", "NOMAD_SKIP_VERIFY=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the plugin read through the proxy: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(proxied) == 0 || len(tokens) == 0 || tokens[0] != token {
		t.Fatalf("the read did not go through the proxy to Nomad: proxy saw %q, Nomad got tokens %q", proxied, tokens)
	}
	for _, p := range proxied {
		if !strings.HasPrefix(p, "CONNECT example.com:443") || strings.Contains(p, token) {
			t.Errorf("the proxy saw %q; want only a CONNECT to example.com:443, without the token", p)
		}
	}
}

// A forward proxy's credentials (HTTP_PROXY=http://USER:PASSWORD@proxy, as the nomad CLI takes
// them) go to the proxy with every request to an http:// Nomad, in its Proxy-Authorization
// header; a proxy that refuses them answers a 407 page, which may echo that header or the
// password. Before, only the credentials sent to Nomad were hidden: the proxy's password
// was shown, as it is and in base64, in the error of every request. They are hidden too. The
// client runs in a child process, since Go reads the proxy variables once per process.
func TestNomadProxyPasswordIsNotShown(t *testing.T) {
	const password = "pr0xy-pa55-9e1d"
	shown, child := proxiedError(t, func(proxy string) string { return strings.Replace(proxy, "http://", "http://puser:"+password+"@", 1) },
		func(r *http.Request) string {
			decoded, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(r.Header.Get("Proxy-Authorization"), "Basic "))
			return "Proxy Authentication Required: Proxy-Authorization: " + r.Header.Get("Proxy-Authorization") + " (" + string(decoded) + ")"
		})
	if child {
		return
	}
	encoded := base64.StdEncoding.EncodeToString([]byte("puser:" + password))
	if strings.Contains(shown, password) || strings.Contains(shown, encoded) {
		t.Errorf("the error shows the proxy's password: %s", shown)
	}
}

// proxiedError runs the test calling it again as a child process whose HTTP_PROXY is
// proxyEnv(the URL of a proxy answering every request 407 with page(request)), Go reading the
// proxy variables once per process. In the child (child true) it asks Nomad through that
// proxy and prints the error met; in the parent it returns that error (shown), failing the
// test where the child met no 407.
func proxiedError(t *testing.T, proxyEnv func(proxyURL string) string, page func(*http.Request) string) (shown string, child bool) {
	t.Helper()
	if os.Getenv("VOLCTL_TEST_PROXY_CHILD") != "" {
		c, err := NewClient("http://nomad.example.com:4646")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Plugin(context.Background(), "hp")
		if err == nil {
			t.Fatal("the proxy's 407 was taken for Nomad's answer")
		}
		os.Stdout.WriteString("\nERROR: " + err.Error() + "\n")
		return "", true
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, page(r), http.StatusProxyAuthRequired)
	}))
	t.Cleanup(proxy.Close)
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "VOLCTL_TEST_PROXY_CHILD=1", "NOMAD_TOKEN=", "NOMAD_HTTP_AUTH=",
		"HTTP_PROXY="+proxyEnv(proxy.URL), "http_proxy=", "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the plugin read through the proxy: %v\n%s", err, out)
	}
	_, shown, ok := strings.Cut(string(out), "\nERROR: ")
	if !ok || !strings.Contains(shown, "407") {
		t.Fatalf("the child did not meet the proxy's 407:\n%s", out)
	}
	return shown, false
}
