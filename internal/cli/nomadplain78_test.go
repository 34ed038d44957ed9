package cli

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

// nonLoopbackIPv4 is an IPv4 address of this host that is not a loopback one, "" when it has
// none.
func nonLoopbackIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			return ipn.IP.String()
		}
	}
	return ""
}

// TestNomadRegisterSaysSecretsGoOverPlainHTTP: `volctl nomad register vault`, volume vault having
// secrets, to a Nomad at an http:// address on another host sends the secrets in the clear over
// the network (in the registration's body), and said nothing of it. Correct: a warning, once a
// command, naming the volume, the address and TLS; none for a Nomad on this host (loopback), nor
// for a volume without secrets. Found by helper review78 (nomad), its note.
func TestNomadRegisterSaysSecretsGoOverPlainHTTP(t *testing.T) {
	ip := nonLoopbackIPv4()
	if ip == "" {
		t.Skip("this host has no non-loopback IPv4 address to serve a Nomad on over the network")
	}
	h := nomadHarness(t)
	for _, id := range []string{"vault", "vault2", "vault3"} {
		if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
			Secrets:      spec.Secrets{"token": "vault-token-SENTINEL"}}); err != nil {
			t.Fatal(err)
		}
	}
	n := newFakeNomad(t)
	// The same fake Nomad, reached over the host's network address.
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(n.serve)}
	crash.Go(func() { _ = srv.Serve(ln) })
	t.Cleanup(func() { _ = srv.Close() })
	overNetwork := func() (*nomad.Client, error) { return nomad.NewClient("http://" + ln.Addr().String()) }

	register := func(c func() (*nomad.Client, error), ids ...string) string {
		t.Helper()
		ios, _, _, errOut := iostreams.Test()
		if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: c, Volumes: ids}); err != nil {
			t.Fatalf("nomad register %v: %v\n%s", ids, err, errOut)
		}
		return errOut.String()
	}
	if errOut := register(overNetwork, "db"); strings.Contains(errOut, "plain HTTP") {
		t.Errorf("nomad register db, which has no secrets, over plain HTTP warns of secrets:\n%s", errOut)
	}
	errOut := register(overNetwork, "vault", "vault3")
	if n := strings.Count(errOut, "over plain HTTP"); n != 1 {
		t.Errorf("nomad register vault vault3 over plain HTTP warned %d times; want once a command:\n%s", n, errOut)
	}
	if !strings.Contains(errOut, `volume "vault"'s secrets go to Nomad at http://`+ln.Addr().String()+" over plain HTTP") || !strings.Contains(errOut, "https://") {
		t.Errorf("nomad register vault, its secrets sent over plain HTTP to %s:\n%s\nwant a warning naming the volume, the address and TLS", ln.Addr(), errOut)
	}
	if strings.Contains(errOut, "vault-token-SENTINEL") {
		t.Errorf("the warning shows the secret:\n%s", errOut)
	}
	if errOut := register(n.client, "vault2"); strings.Contains(errOut, "plain HTTP") {
		t.Errorf("nomad register vault2 to a Nomad on this host (%s) warns of the network:\n%s", n.srv.URL, errOut)
	}
}
