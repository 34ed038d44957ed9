package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

// NOMAD_HTTP_AUTH's password is also the name of a local volume and of its plugin (a dev
// cluster's admin:pg-primary-2024). The credentials sent to Nomad were scrubbed from every
// string of nomad status's and register --dry-run's output, volctl's own identifiers
// included: the volume's ID and plugin ID were "[REDACTED]" in --json (a contract, which a
// script feeds back to volctl) and in the table, while the text of register names the
// volume as it is. volctl's own identifiers, and what Nomad answers that is exactly one of
// them, are shown; the credential echoed anywhere else in Nomad's answer stays hidden. Kept
// by their place, not by their value (review32g): kept wherever a string equalled an own ID,
// Nomad's copy's context {"nomad_http_password": "pg-primary-2024"} was shown as it is, the
// key saying which string is the password.
func TestNomadOutputKeepsVolctlsOwnIDsEqualToACredential(t *testing.T) {
	const cred = "pg-primary-2024"
	h := nomadHarnessWithVolume(t, cred, cred)
	info, err := h.e.Volume(h.ctx, cred)
	if err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	n.mu.Lock()
	n.vols["default/"+cred] = true
	// Nomad's copy echoes the credential into its context, beside its own ID.
	n.sent["default/"+cred] = map[string]any{"PluginID": cred, "ExternalID": info.ExternalID, "Context": map[string]any{"echo": "auth " + cred + " seen", "nomad_http_password": cred}}
	n.mu.Unlock()
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "admin:"+cred)
	client := func() (*nomad.Client, error) { return nomad.NewClient(n.srv.URL) }

	ios, _, out, _ := iostreams.Test()
	err = nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{cred},
		Exporter: exportFlags{JSON: true}})
	if err != nil {
		t.Logf("nomad status: %v", err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got) != 1 || got[0]["id"] != cred {
		t.Errorf("nomad status --json does not name volume %q: %s", cred, out)
	}
	if got[0]["plugin_id"] != cred {
		t.Errorf("nomad status --json does not name plugin %q: %s", cred, out)
	}
	if nv, _ := got[0]["nomad"].(map[string]any); nv == nil || nv["id"] != cred || nv["plugin_id"] != cred {
		t.Errorf("nomad status --json: Nomad's copy's ID and plugin ID, the volume's own, are not shown: %s", out)
	}
	if strings.Contains(out.String(), "auth "+cred) {
		t.Errorf("nomad status --json shows the password Nomad's answer echoed: %s", out)
	}
	if nv, _ := got[0]["nomad"].(map[string]any); nv != nil {
		if ctx, _ := nv["context"].(map[string]any); ctx == nil || ctx["nomad_http_password"] != spec.Redacted {
			t.Errorf("nomad status --json shows Nomad's echo of the password, whole, under its key, because it equals the volume's ID: %s", out)
		}
	}

	ios, _, out, _ = iostreams.Test()
	nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{cred}})
	if !strings.Contains(out.String(), cred+" ") {
		t.Errorf("nomad status's table does not name volume %q:\n%s", cred, out)
	}

	ios, _, out, _ = iostreams.Test()
	nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{cred}, DryRun: true,
		Exporter: exportFlags{JSON: true}})
	var plan []map[string]any
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(plan) != 1 || plan[0]["id"] != cred {
		t.Errorf("nomad register --dry-run --json does not name volume %q: %s", cred, out)
	}
	if strings.Contains(out.String(), "auth "+cred) {
		t.Errorf("nomad register --dry-run --json shows the password Nomad's answer echoed: %s", out)
	}
}

// nomadHarnessWithVolume is nomadHarness with a hostpath plugin of its own registered as
// pluginID and volume id created on it.
func nomadHarnessWithVolume(t *testing.T, pluginID, id string) *cliHarness {
	t.Helper()
	h := nomadHarness(t)
	srv := hostpathtest.Start(t, hostpath.Config{NodeID: "n1"})
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: pluginID, Type: spec.PluginMonolith, Socket: strings.TrimPrefix(srv.Endpoint, "unix://")}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: pluginID, CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	return h
}
