package nomad

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A TLS mismatch between volctl and Nomad: the error names what to set or change
// (NOMAD_CACERT, NOMAD_TLS_SERVER_NAME, NOMAD_CLIENT_CERT/KEY, https vs http in NOMAD_ADDR),
// not "is Nomad running there?" about a Nomad that is running and answered.
func TestNomadTLSErrorsNameTheFix(t *testing.T) {
	for _, v := range []string{"NOMAD_ADDR", "NOMAD_CACERT", "NOMAD_CAPATH", "NOMAD_CLIENT_CERT", "NOMAD_CLIENT_KEY", "NOMAD_TLS_SERVER_NAME", "NOMAD_SKIP_VERIFY"} {
		t.Setenv(v, "")
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "1")
		w.Write([]byte(`{"ID":"hp","NodesHealthy":1}`))
	})
	caFile := func(t *testing.T, srv *httptest.Server) string {
		p := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (address string)
		want  []string
	}{
		{"a certificate from a CA volctl does not know", func(t *testing.T) string {
			srv := quietTLS(ok)
			t.Cleanup(srv.Close)
			return srv.URL
		}, []string{"certificate", "NOMAD_CACERT"}},
		{"plain HTTP addressed as https", func(t *testing.T) string {
			srv := httptest.NewServer(ok)
			t.Cleanup(srv.Close)
			return strings.Replace(srv.URL, "http://", "https://", 1)
		}, []string{"plain HTTP", "http://"}},
		{"https addressed as http", func(t *testing.T) string {
			srv := quietTLS(ok)
			t.Cleanup(srv.Close)
			return strings.Replace(srv.URL, "https://", "http://", 1)
		}, []string{"https://", "NOMAD_ADDR"}},
		{"a certificate for another name", func(t *testing.T) string {
			srv := quietTLS(ok) // for example.com and 127.0.0.1
			t.Cleanup(srv.Close)
			t.Setenv("NOMAD_CACERT", caFile(t, srv))
			return strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
		}, []string{"localhost", "NOMAD_TLS_SERVER_NAME"}},
		{"a client certificate required", func(t *testing.T) string {
			srv := httptest.NewUnstartedServer(ok)
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert}
			srv.StartTLS()
			t.Cleanup(srv.Close)
			t.Setenv("NOMAD_CACERT", caFile(t, srv))
			return srv.URL
		}, []string{"client certificate", "NOMAD_CLIENT_CERT", "NOMAD_CLIENT_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.setup(t)
			c, err := NewClient(addr)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Plugin(context.Background(), "hp")
			if err == nil {
				t.Fatal("the plugin was read across the TLS mismatch")
			}
			t.Log(err)
			if strings.Contains(err.Error(), "is Nomad running there?") {
				t.Errorf("TLS mismatch: %v\nasks whether Nomad is running rather than naming what to fix", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("TLS mismatch: %v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

// quietTLS is httptest.NewTLSServer, without the log line of each handshake a test fails on
// purpose.
func quietTLS(h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	return srv
}
