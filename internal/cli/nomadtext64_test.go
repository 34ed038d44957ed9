package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
)

// NOMAD_HTTP_AUTH's password is also the name of a local volume and of its plugin (the case
// TestNomadOutputKeepsVolctlsOwnIDsEqualToACredential holds --json and nomad status to: volctl's
// own identifiers are shown, the credential elsewhere hidden). This round's first scrubbing of
// register --dry-run's text lines scrubbed every write with the Nomad credentials too, the
// volume's and plugin's IDs included: "Would register volume "[REDACTED]" ... (plugin
// "[REDACTED]", ...)", where the --json plan of the same run names them, and the command it
// advised (`volctl nomad register [REDACTED]`) did not run as written. Found by helper review64
// (own3), in this round's change.
func TestDryRunTextKeepsVolctlsOwnIDsEqualToACredential(t *testing.T) {
	const cred = "pg-primary-2024"
	h := nomadHarnessWithVolume(t, cred, cred)
	n := newFakeNomad(t)
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "admin:"+cred)
	client := func() (*nomad.Client, error) { return nomad.NewClient(n.srv.URL) }

	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{cred}, DryRun: true})
	t.Logf("nomad register --dry-run: %v\n%s%s", err, out, errOut)
	if !strings.Contains(out.String(), "volume \""+cred+"\"") {
		t.Errorf("nomad register --dry-run's text does not name volume %q, whose ID is volctl's own (--json names it):\n%s", cred, out)
	}
	if !strings.Contains(out.String(), "plugin \""+cred+"\"") {
		t.Errorf("nomad register --dry-run's text does not name plugin %q, whose ID is volctl's own:\n%s", cred, out)
	}
}

// The same, with NOMAD_NAMESPACE naming the Nomad namespace the volume goes to, whose name is
// the password: the dry-run's line said it goes "in namespace [REDACTED]", where --json of the
// same plan keeps nomad_namespace (redactNomadOutput's keep) and the registration's own text
// names it. Found by helper review64 (own3), in this round's change.
func TestDryRunTextNamesTheNamespaceItGoesTo(t *testing.T) {
	const cred = "pg-primary-2024"
	h := nomadHarnessWithVolume(t, "hp", "db")
	n := newFakeNomad(t)
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "admin:"+cred)
	t.Setenv("NOMAD_NAMESPACE", cred)
	client := func() (*nomad.Client, error) { return nomad.NewClient(n.srv.URL) }

	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"db"}, DryRun: true})
	t.Logf("nomad register --dry-run: %v (exit %d)\n%s%s", err, ExitCode(err), out, errOut)
	if !strings.Contains(out.String(), "in namespace "+cred) {
		t.Errorf("nomad register --dry-run's text does not name the namespace %q the volume would go to (--json's nomad_namespace does):\n%s", cred, out)
	}
}
