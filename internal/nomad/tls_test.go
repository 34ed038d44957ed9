package nomad

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		// Set, but to what Nomad's tools do not read as a boolean ("yes"): ignored, by the
		// nomad CLI too, and the check it was meant to skip fails, the error telling to set
		// the variable that is set.
		{"NOMAD_SKIP_VERIFY=yes, which is not read", func(t *testing.T) string {
			srv := quietTLS(ok)
			t.Cleanup(srv.Close)
			t.Setenv("NOMAD_SKIP_VERIFY", "yes")
			return srv.URL
		}, []string{"NOMAD_CACERT", `NOMAD_SKIP_VERIFY="yes" is not read`, "true or false"}},
		{"a CA file of another CA", func(t *testing.T) string {
			srv := quietTLS(ok)
			t.Cleanup(srv.Close)
			other, _ := selfSigned(t, t.TempDir(), "another-ca")
			t.Setenv("NOMAD_CACERT", other)
			return srv.URL
		}, []string{"NOMAD_CACERT=", "does not hold the CA"}},
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
		{"NOMAD_TLS_SERVER_NAME naming a host the certificate is not for", func(t *testing.T) string {
			srv := quietTLS(ok) // for example.com and 127.0.0.1
			t.Cleanup(srv.Close)
			t.Setenv("NOMAD_CACERT", caFile(t, srv))
			t.Setenv("NOMAD_TLS_SERVER_NAME", "server.global.nomad")
			return srv.URL
		}, []string{"NOMAD_TLS_SERVER_NAME=server.global.nomad", "not for"}},
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

// A TLS variable naming a file volctl cannot use: the error names the variable and its file
// (NOMAD_CLIENT_KEY=PATH), not "tls: failed to find any PEM data in key input" about a
// file it does not name, nor "Both client cert and client key must be provided" about a pair
// of which one is set.
func TestNomadTLSFileErrorsNameTheVariable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert, key := selfSigned(t, dir, "client")
	_, otherKey := selfSigned(t, dir, "other")
	garbage := write("garbage.pem", []byte("not PEM at all\n"))
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"a client certificate that is not one", map[string]string{"NOMAD_CLIENT_CERT": garbage, "NOMAD_CLIENT_KEY": key},
			[]string{"NOMAD_CLIENT_CERT=" + garbage}},
		{"a client key that is not one", map[string]string{"NOMAD_CLIENT_CERT": cert, "NOMAD_CLIENT_KEY": garbage},
			[]string{"NOMAD_CLIENT_KEY=" + garbage}},
		{"a client key given as the certificate", map[string]string{"NOMAD_CLIENT_CERT": cert, "NOMAD_CLIENT_KEY": cert},
			[]string{"NOMAD_CLIENT_KEY=" + cert}},
		{"a client key missing", map[string]string{"NOMAD_CLIENT_CERT": cert, "NOMAD_CLIENT_KEY": missing},
			[]string{"NOMAD_CLIENT_KEY=" + missing}},
		{"a key of another certificate", map[string]string{"NOMAD_CLIENT_CERT": cert, "NOMAD_CLIENT_KEY": otherKey},
			[]string{"NOMAD_CLIENT_CERT=" + cert, "NOMAD_CLIENT_KEY=" + otherKey}},
		{"a client certificate without its key", map[string]string{"NOMAD_CLIENT_CERT": cert},
			[]string{"NOMAD_CLIENT_CERT=" + cert, "NOMAD_CLIENT_KEY is not set"}},
		{"a client key without its certificate", map[string]string{"NOMAD_CLIENT_KEY": key},
			[]string{"NOMAD_CLIENT_KEY=" + key, "NOMAD_CLIENT_CERT is not set"}},
		{"a CA file that is not PEM", map[string]string{"NOMAD_CACERT": garbage}, []string{"NOMAD_CACERT=" + garbage}},
		{"a CA file missing", map[string]string{"NOMAD_CACERT": missing}, []string{"NOMAD_CACERT=" + missing}},
		{"a CA directory missing", map[string]string{"NOMAD_CAPATH": missing}, []string{"NOMAD_CAPATH=" + missing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{"NOMAD_CACERT", "NOMAD_CAPATH", "NOMAD_CLIENT_CERT", "NOMAD_CLIENT_KEY", "NOMAD_TLS_SERVER_NAME", "NOMAD_SKIP_VERIFY"} {
				t.Setenv(v, tc.env[v])
			}
			_, err := NewClient("https://127.0.0.1:4646")
			if err == nil {
				t.Fatal("a client was made from TLS files it cannot use")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

// selfSigned writes a self-signed certificate and its key to dir, as PEM files NAME.pem and
// NAME-key.pem.
func selfSigned(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	for p, b := range map[string][]byte{cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key
}
