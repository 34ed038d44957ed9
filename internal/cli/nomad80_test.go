package cli

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

// overTheNetwork serves fake Nomad n on this host's non-loopback IPv4 address as well, and
// returns a client for that address: a Nomad reached over plain HTTP across a network.
func overTheNetwork(t *testing.T, n *fakeNomad) (func() (*nomad.Client, error), string) {
	t.Helper()
	ip := nonLoopbackIPv4()
	if ip == "" {
		t.Fatalf("this host has no non-loopback IPv4 address to serve a Nomad on over the network")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(n.serve)}
	crash.Go(func() { _ = srv.Serve(ln) })
	t.Cleanup(func() { _ = srv.Close() })
	addr := "http://" + ln.Addr().String()
	return func() (*nomad.Client, error) { return nomad.NewClient(addr) }, addr
}

// TestNomadRegisterSaysMountFlagPasswordsGoOverPlainHTTP: `volctl nomad register share`,
// volume share having no secrets block but a cifs-style mount flag holding a password
// ("password=..."), to a Nomad at an http:// address on another host sends that password in the
// clear in the registration's body (APIVolume sends mount flags raw), and says nothing: the
// plain-HTTP warning looks at the secrets block only (nomadRegisterOne: `len(want.Secrets) >
// 0`). volctl treats such a flag as a secret everywhere else (export writes mount flags as
// placeholders, scrub and spec.MountFlagSecrets mask the password in every message). Correct:
// the same warning, once a command, for a volume whose mount flags carry a secret (or any mount
// flags, as export treats them), naming the volume and TLS, never the password.
// Found by helper review80 (nomad).
func TestNomadRegisterSaysMountFlagPasswordsGoOverPlainHTTP(t *testing.T) {
	h := nomadHarness(t)
	// A plugin that takes any mount flag (volctl's own hostpath takes a bind mount's only),
	// under the driver name the fake Nomad answers for every plugin.
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "hostpath.csi.volctl.dev"
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	const password = "Hunter2-mountpass-SENTINEL"
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "share", Name: "share", Type: "csi", PluginID: "mem", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"username=bob", "password=" + password}}}); err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	client, addr := overTheNetwork(t, n)
	ios, _, _, errOut := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"share"}}); err != nil {
		t.Fatalf("nomad register share: %v\n%s", err, errOut)
	}
	n.mu.Lock()
	var sent string
	if len(n.puts) > 0 {
		sent = n.puts[len(n.puts)-1]
	}
	n.mu.Unlock()
	if !strings.Contains(sent, password) {
		t.Fatalf("precondition: the registration's body does not carry the mount flag's password: %s", sent)
	}
	if !strings.Contains(errOut.String(), "plain HTTP") || !strings.Contains(errOut.String(), `"share"`) {
		t.Errorf("nomad register share sent its mount flag's password to Nomad at %s over plain HTTP, and said nothing of it:\n%s\nwant the plain-HTTP warning naming the volume, as for a secrets block", addr, errOut)
	}
	if strings.Contains(errOut.String(), password) {
		t.Errorf("the output shows the mount flag's password:\n%s", errOut)
	}
}

// TestNomadRegisterDryRunSaysSecretsWouldGoOverPlainHTTP: `volctl nomad register --dry-run
// vault --json`, volume vault having secrets, Nomad at an http:// address on another host: the
// plan says "register", no warning, exit 0, and stderr says nothing, while the registration
// itself warns that the secrets go over plain HTTP — printed as it sends them, with no way left
// to stop it. The plan is the one place to learn it before the secrets cross the network (a CI
// gating the handover on the plan's warnings); planRegistration never looks (the warning is in
// nomadRegisterOne's non-dry-run path only). Correct: the plan's `warnings`, and stderr, say
// that the volume's secrets would go to Nomad over plain HTTP, as the registration does.
// Found by helper review80 (nomad).
func TestNomadRegisterDryRunSaysSecretsWouldGoOverPlainHTTP(t *testing.T) {
	h := nomadHarness(t)
	createVaultWithASecret(t, h)
	n := newFakeNomad(t)
	client, addr := overTheNetwork(t, n)
	ios, _, out, errOut := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"vault"},
		DryRun: true, Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatalf("nomad register --dry-run vault: %v\n%s", err, errOut)
	}
	var plans []NomadRegisterPlan
	if err := json.Unmarshal(out.Bytes(), &plans); err != nil || len(plans) != 1 || plans[0].Action != "register" {
		t.Fatalf("precondition: the plan of vault: %v\n%s", err, out)
	}
	n.mu.Lock()
	sentAny := len(n.puts) != 0
	n.mu.Unlock()
	if sentAny {
		t.Fatalf("precondition: --dry-run sent a registration")
	}
	// The registration itself, to the same Nomad, warns.
	ios2, _, _, errOut2 := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios2, Engine: h.engine, Nomad: client, Volumes: []string{"vault"}}); err != nil {
		t.Fatalf("nomad register vault: %v\n%s", err, errOut2)
	}
	if !strings.Contains(errOut2.String(), "plain HTTP") {
		t.Fatalf("precondition: the registration itself does not warn of plain HTTP:\n%s", errOut2)
	}
	inPlan := slices.ContainsFunc(plans[0].Warnings, func(w string) bool { return strings.Contains(w, "plain HTTP") })
	if !inPlan || !strings.Contains(errOut.String(), "plain HTTP") {
		t.Errorf("nomad register --dry-run vault --json, Nomad at %s over plain HTTP on another host: warnings %q, stderr:\n%s\nwant the plan to warn, in its warnings and on stderr, that the volume's secrets would go over plain HTTP, as the registration warns only as it sends them",
			addr, plans[0].Warnings, errOut)
	}
}

// TestNomadStatusJSONSaysItCouldNotTellWhetherNomadErasesSecrets: `volctl nomad status vault
// --json`, volume vault (with secrets) handed over, NOMAD_TOKEN without node read (Nomad refuses
// /v1/agent/members): the object has no `erasing` and stderr says nothing, while the same command
// without --json notes that Nomad did not say which versions its servers run, so volctl could not
// tell whether they erase the volume's secrets (erasingAnswer.note is printed in the table branch
// only, though nomadStatusRun's other notes "go to stderr with it too, as register --dry-run's
// do", and register --dry-run --json does print this one). An absent `erasing` then reads as
// "not erased". Correct: the note on stderr with --json too, as the text output gives it.
// Found by helper review80 (nomad).
func TestNomadStatusJSONSaysItCouldNotTellWhetherNomadErasesSecrets(t *testing.T) {
	h := nomadHarness(t)
	createVaultWithASecret(t, h)
	n := newFakeNomad(t)
	ios, _, _, errOut := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"vault"}}); err != nil {
		t.Fatalf("nomad register vault: %v\n%s", err, errOut)
	}
	n.mu.Lock()
	n.builds = []string{"403"} // a token without node read
	n.mu.Unlock()
	status := func(asJSON bool) (string, string) {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"vault"},
			Exporter: exportFlags{JSON: asJSON}}); err != nil {
			t.Fatalf("nomad status vault (json %v): %v\n%s", asJSON, err, errOut)
		}
		return out.String(), errOut.String()
	}
	const couldNot = "did not say which versions its servers run"
	if _, text := status(false); !strings.Contains(text, couldNot) {
		t.Fatalf("precondition: nomad status vault (text) does not note that Nomad did not say its servers' versions:\n%s", text)
	}
	out, errText := status(true)
	if strings.Contains(out, `"erasing"`) {
		t.Fatalf("precondition: nomad status --json has erasing: %s", out)
	}
	if !strings.Contains(errText, couldNot) {
		t.Errorf("nomad status vault --json, Nomad refusing to say its servers' versions: no `erasing` and stderr:\n%s\nwant the note that volctl could not tell whether Nomad erases the volume's secrets, as the text output says", errText)
	}
}

// createVaultWithASecret creates volume vault, with a secret, through h's plugin hp.
func createVaultWithASecret(t *testing.T, h *cliHarness) {
	t.Helper()
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "vault", Name: "vault", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets:      spec.Secrets{"token": "vault-token-SENTINEL"}}); err != nil {
		t.Fatal(err)
	}
}
