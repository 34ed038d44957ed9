package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// What Nomad says besides an error — the warnings of a registration, where a redirect points —
// may echo the ACL token or the volume's secrets (a proxy echoing headers, a policy quoting the
// request): neither is shown.
func TestNomadWarningsAndRedirectsDoNotShowSecrets(t *testing.T) {
	const token = "7c1e-acl-token-secret"
	t.Setenv("NOMAD_TOKEN", token)
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		a.take("default", "db")
		return answerOK(w, `{"Warnings":"policy: request by `+r.Header.Get("X-Nomad-Token")+`"}`)
	})
	out, errOut, err := registerIn(h, a)
	if err != nil || !strings.Contains(errOut, "Warning: Nomad: policy: request by") {
		t.Fatalf("register with warnings: %q %q %v", out, errOut, err)
	}
	if strings.Contains(out+errOut, token) {
		t.Errorf("the ACL token in Nomad's warnings is shown: %q", errOut)
	}
	// A redirect to a place that names the token.
	b := newFakeNomad(t)
	b.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/login?token="+r.Header.Get("X-Nomad-Token"), http.StatusFound)
	})
	c, err := b.client()
	if err != nil {
		t.Fatal(err)
	}
	_, perr := c.Plugin(context.Background(), "hp")
	if perr == nil || strings.Contains(perr.Error(), token) || !strings.Contains(perr.Error(), "redirect to http://elsewhere.invalid") {
		t.Errorf("redirect naming the token: %v", perr)
	}
}

// Nomad's copy of a volume, which nomad status shows, is what Nomad (or what answers for it)
// says: one that echoes the ACL token into it (a plugin's description, an alloc's name) does
// not get it printed.
func TestNomadStatusDoesNotShowTheToken(t *testing.T) {
	const token = "9d2b-acl-token-secret"
	t.Setenv("NOMAD_TOKEN", token)
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	a.readBack = func(v map[string]any) {
		v["Provider"] = "hostpath " + token
		v["Allocations"] = []map[string]any{{"ID": "a1", "Name": "web[" + token + "]"}}
		v["WriteAllocs"] = map[string]any{"a1": nil}
	}
	for _, json := range []bool{true, false} {
		ios, _, out, _ := iostreams.Test()
		err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: a.client,
			Volumes: []string{"db"}, Exporter: exportFlags{JSON: json}})
		if err != nil || !strings.Contains(out.String(), "web[") {
			t.Fatalf("nomad status: %q, %v", out, err)
		}
		if strings.Contains(out.String(), token) {
			t.Errorf("nomad status (json %v) shows the ACL token Nomad echoed:\n%s", json, out)
		}
	}
}

// nomad release's refusal quotes Nomad's copy of the volume: the allocs that claim it and their
// jobs, or what differs in another volume by the ID. What echoes the ACL token into those (an
// alloc's name, a job's, a plugin ID) does not get it printed, as nomad status does not.
func TestNomadReleaseRefusalDoesNotShowTheToken(t *testing.T) {
	const token = "4f1a-acl-token-secret"
	t.Setenv("NOMAD_TOKEN", token)
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"claimed", func(v map[string]any) {
			v["Allocations"] = []map[string]any{{"ID": "a1", "Name": "web[" + token + "]", "JobID": "job-" + token}}
			v["WriteAllocs"] = map[string]any{"a1": nil}
		}, "Nomad's allocs claim it: web["},
		{"another volume", func(v map[string]any) { v["PluginID"] = "hp-" + token }, "that is another volume"},
	} {
		a.readBack = c.edit
		_, err := runNomadRelease(h, a.client, nil)
		if err == nil || !handedOver(t, h) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: release while Nomad has it: %v, want it refused saying %q", c.name, err, c.want)
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("%s: nomad release's refusal shows the ACL token Nomad echoed: %v", c.name, err)
		}
	}
}

// What answers for Nomad may echo the ACL token anywhere, in the fields of another volume by
// the ID included: `volctl nomad register --dry-run` says how that one differs without it, as
// the registration, nomad status and release do (and its --json, redacted as status's is).
// Before, the plan's text printed what Nomad said as it was.
func TestNomadRegisterDryRunDoesNotShowTheToken(t *testing.T) {
	const token = "4f1a-acl-token-secret"
	t.Setenv("NOMAD_TOKEN", token)
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.mu.Lock()
	a.vols["default/db"] = true
	a.sent["default/db"] = map[string]any{"ExternalID": "disk-" + token, "PluginID": "hp-" + token}
	a.mu.Unlock()
	for _, json := range []bool{false, true} {
		ios, _, out, errOut := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{"db"}, DryRun: true, Exporter: exportFlags{JSON: json}})
		if ExitCode(err) != ExitConflict || !strings.Contains(out.String(), "another") {
			t.Fatalf("--dry-run (json %v) over another volume: %v (exit %d), out %q; want exit 4 saying it is another one", json, err, ExitCode(err), out)
		}
		if all := out.String() + errOut.String() + err.Error(); strings.Contains(all, token) {
			t.Errorf("--dry-run (json %v) shows the ACL token Nomad echoed: %s", json, all)
		}
	}
}
