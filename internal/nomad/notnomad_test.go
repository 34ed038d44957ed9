package nomad

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// NOMAD_ADDR with no scheme (host:port, as `nomad agent` prints its bind address) or one the
// API client cannot speak: the error says what NOMAD_ADDR must start with, and what to write,
// not "is Nomad running there?", which sent the user looking for a Nomad that was running.
func TestNomadAddressWithoutAnHTTPSchemeIsNamed(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"localhost:4646", "NOMAD_ADDR=localhost:4646 must start with http://, https:// or unix://: NOMAD_ADDR=http://localhost:4646"},
		{"127.0.0.1:4646", "NOMAD_ADDR=127.0.0.1:4646 must start with http://, https:// or unix://: NOMAD_ADDR=http://127.0.0.1:4646"},
		{"nomad.example", "NOMAD_ADDR=nomad.example must start with http://, https:// or unix://: NOMAD_ADDR=http://nomad.example"},
		{"ftp://127.0.0.1:4646", "NOMAD_ADDR=ftp://127.0.0.1:4646 must start with http://, https:// or unix://"},
		// A password before the host, not parsed as one without a scheme, is not shown.
		{"ops:s3cret@nomad.example:4646", "NOMAD_ADDR=xxxxx@nomad.example:4646 must start with http://, https:// or unix://: NOMAD_ADDR=http://xxxxx@nomad.example:4646"},
		// A password holding '#', '/' or '?' (generated ones do) is hidden whole, up to the last
		// '@': review25c saw it printed.
		{"ops:s3cret#x@nomad.example:4646", "NOMAD_ADDR=xxxxx@nomad.example:4646 must start with"},
		{"ops:s3cret/x@nomad.example:4646", "NOMAD_ADDR=xxxxx@nomad.example:4646 must start with"},
		{"ops:s3cret?x@nomad.example:4646", "NOMAD_ADDR=xxxxx@nomad.example:4646 must start with"},
		// The scheme without its two slashes: the advice was NOMAD_ADDR=http://http:nomad...,
		// a host named "http" (recheck33b).
		{"http:nomad.example:4646", "must start with http://, https:// or unix://, two slashes after the scheme: NOMAD_ADDR=http://nomad.example:4646"},
		{"HTTPS:/nomad.example:4646", "two slashes after the scheme: NOMAD_ADDR=HTTPS://nomad.example:4646"},
		{`http:\\nomad.example:4646`, "two slashes after the scheme: NOMAD_ADDR=http://nomad.example:4646"},
		{"unix:/run/nomad.sock", "two slashes after the scheme: NOMAD_ADDR=unix:///run/nomad.sock"},
		{"http:ops:s3cret@nomad.example:4646", "two slashes after the scheme: NOMAD_ADDR=http://xxxxx@nomad.example:4646 (with your user and password in place of xxxxx)"},
	} {
		_, err := NewClient(tc.addr)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "running there") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NOMAD_ADDR=%s: %v; want an error saying %q", tc.addr, err, tc.want)
		}
	}
	// One url.Parse cannot read (a '#' in its password ends the host early: "invalid port"),
	// its error naming the address: the password hidden there too.
	if _, err := NewClient("http://ops:s3cret#x@127.0.0.1:1"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("NOMAD_ADDR=http://ops:s3cret#x@127.0.0.1:1: %v; want an error without the password", err)
	}
	for _, addr := range []string{"http://127.0.0.1:4646", "HTTPS://nomad.example", "unix:///run/nomad.sock"} {
		if _, err := NewClient(addr); err != nil {
			t.Errorf("NOMAD_ADDR=%s: %v, want a client", addr, err)
		}
	}
}

// TestNomadAddressWithStrayTextIsNamed: NOMAD_ADDR with a blank before it was told it "must
// start with http://", which it did, after the blank; one with a newline ($(cat FILE)) printed
// it raw, breaking the error's line, and one with a blank after it got Go's "invalid port
// ":4646 " after host". Each says what is stray in it, the address quoted (escaped), and
// what to write.
func TestNomadAddressWithStrayTextIsNamed(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{" http://127.0.0.1:4646", `NOMAD_ADDR=" http://127.0.0.1:4646" begins with a blank: write the address without it`},
		{"http://127.0.0.1:4646 ", `NOMAD_ADDR="http://127.0.0.1:4646 " ends with a blank: write the address without it`},
		{"http://127.0.0.1:4646\n", `NOMAD_ADDR="http://127.0.0.1:4646\n" holds a control character ('\n'`},
		{"http://127.0.0.1:4646\r", `holds a control character ('\r'`},
		// A password before the host, which url.Parse cannot read to hide here, is not shown.
		{"http://ops:s3cret@nomad.example:4646\n", `NOMAD_ADDR="http://xxxxx@nomad.example:4646\n" holds a control character`},
		{"http://ops:s3cret#x@nomad.example:4646\n", `NOMAD_ADDR="http://xxxxx@nomad.example:4646\n" holds a control character`},
		{"  ", `NOMAD_ADDR="  " is blanks only: set it to Nomad's address, or unset it for http://127.0.0.1:4646`},
	} {
		addr := tc.addr
		_, err := NewClient(addr)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.ContainsAny(err.Error(), "\n\r") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NOMAD_ADDR=%q: %v; want an error saying %q, nothing raw, no password", addr, err, tc.want)
		}
	}
}

// What answers at NOMAD_ADDR and does not speak HTTP/1.1 (a CSI plugin's gRPC socket, which
// answers with an HTTP/2 frame; an SSH server): the error names the address, says it is not
// Nomad's HTTP API and what NOMAD_ADDR must name, not "is Nomad running there?".
func TestNomadAddressAnsweringNotHTTPIsNamed(t *testing.T) {
	for _, tc := range []struct{ name, network, greeting string }{
		{"grpc on a unix socket", "unix", "\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x05\x00\x00@\x00"},
		{"ssh on tcp", "tcp", "SSH-2.0-OpenSSH_9.6\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if tc.network == "unix" {
				addr = filepath.Join(t.TempDir(), "csi.sock")
			}
			l, err := net.Listen(tc.network, addr)
			if err != nil {
				t.Fatal(err)
			}
			acceptEach(t, l, func(conn net.Conn) {
				// The request read whole first, as a gRPC server reads its preface, so
				// that the client sees the answer, not its own write refused.
				var req []byte
				buf := make([]byte, 4096)
				for !strings.Contains(string(req), "\r\n\r\n") {
					n, err := conn.Read(buf)
					if err != nil {
						break
					}
					req = append(req, buf[:n]...)
				}
				conn.Write([]byte(tc.greeting))
			})
			nomadAddr := "http://" + l.Addr().String()
			if tc.network == "unix" {
				nomadAddr = "unix://" + addr
			}
			c, err := NewClient(nomadAddr)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Plugin(context.Background(), "hp")
			if err == nil || !strings.Contains(err.Error(), "Nomad at "+nomadAddr) || !strings.Contains(err.Error(), "does not speak HTTP") ||
				!strings.Contains(err.Error(), "NOMAD_ADDR must name Nomad's HTTP API") || strings.Contains(err.Error(), "running there") {
				t.Errorf("plugin read from %s: %v; want the address named as not Nomad's HTTP API", nomadAddr, err)
			}
		})
	}
}

// A TLS server that is not Go's HTTP one (OpenSSL's s_server, a TLS proxy or load balancer
// before Nomad) at an http:// NOMAD_ADDR: it fails the handshake on the plain request and
// closes the connection without an answer. The error says that something there closed it,
// and that a TLS server does so, with the fix (https://); before, Go's "EOF" and "is Nomad
// running there?", which sent the user looking for a Nomad that was running.
func TestNomadAddressClosingWithoutAnAnswerIsNamed(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.StartTLS() // for its certificate
	srv.Close()
	l, err := tls.Listen("tcp", "127.0.0.1:0", srv.TLS)
	if err != nil {
		t.Fatal(err)
	}
	acceptEach(t, l, func(conn net.Conn) {
		_ = conn.(*tls.Conn).Handshake() // fails on the plain request: closed, no answer
	})
	c, err := NewClient("http://" + l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Plugin(context.Background(), "hp")
	for _, want := range []string{"closed the connection without answering", "a TLS server", "NOMAD_ADDR must say https://"} {
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "is Nomad running there?") {
			t.Errorf("plugin read from a TLS server at an http:// address: %v; want it to say %q, not ask whether Nomad runs there", err, want)
		}
	}
}

// acceptEach serves each connection l accepts with serve, then closes it, until the test ends
// (which closes l).
func acceptEach(t *testing.T, l net.Listener, serve func(net.Conn)) {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			serve(conn)
			conn.Close()
		}
	}()
}
