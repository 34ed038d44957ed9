package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNomadRegisterDriverMismatchDoesNotShowTheToken: `volctl nomad register db`, Nomad's
// answer about plugin hp naming another driver (its Provider), as what answers for Nomad may
// fill it with the request's ACL token (a proxy echoing headers). The refusal quotes that
// Provider as it is: "plugin "hp" in Nomad at ... is driver "...<token>...", but here it is
// ...", and main prints it whole, the ACL token on the terminal. Every other word of Nomad's
// that volctl shows (a plugin's ID of PluginsOfDriver, nomad status's Provider, Nomad's
// warnings) is shown with the credentials sent to Nomad hidden (nomad.Client.Hide).
// Correct: the refusal says the drivers differ without the token.
// Found by helper review82 (nomad).
func TestNomadRegisterDriverMismatchDoesNotShowTheToken(t *testing.T) {
	const token = "6b2e-acl-token-secret"
	t.Setenv("NOMAD_TOKEN", token)
	h := nomadHarness(t)
	n := newFakeNomad(t)
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/plugin/csi/") {
			w.Header().Set("X-Nomad-Index", "1")
			json.NewEncoder(w).Encode(map[string]any{"ID": strings.TrimPrefix(r.URL.Path, "/v1/plugin/csi/"),
				"Provider": "other.csi.example/" + r.Header.Get("X-Nomad-Token"), "NodesHealthy": 1, "NodesExpected": 1})
			return
		}
		inner.ServeHTTP(w, r)
	})
	t.Setenv("NOMAD_ADDR", n.srv.URL)
	code, out, errOut := h.runReported("nomad", "register", "db")
	if code == ExitOK || !strings.Contains(errOut, "is driver") {
		t.Fatalf("precondition: nomad register db, Nomad's plugin hp of another driver: exit %d\nstdout: %s\nstderr: %s\nwant it refused naming the drivers", code, out, errOut)
	}
	if strings.Contains(out+errOut, token) {
		t.Errorf("nomad register db shows the ACL token Nomad echoed into its plugin's driver name:\n%s", errOut)
	}
}

// TestNomadRegisterErasingWarningDoesNotShowTheToken: `volctl nomad register vault` (a volume
// with secrets) against a Nomad whose /v1/agent/members answer (servers of a build before
// 1.11.1, which erase a volume's secrets at each event-stream event) echoes the request's ACL
// token into a server's name. The warning names each such server as Nomad gossips it, and is
// printed as it is: the ACL token on stderr. `nomad status` shows the same warning with the
// token hidden (its rows go through redactNomadOutput), and every other word of Nomad's the
// register shows goes through nomad.Client.Hide; this one (erasingAnswer.warning) does not, in
// the registration nor in --dry-run's text. Correct: the warning names the servers without the
// token.
// Found by helper review82 (nomad).
func TestNomadRegisterErasingWarningDoesNotShowTheToken(t *testing.T) {
	const token = "3d9a-acl-token-secret"
	t.Setenv("NOMAD_TOKEN", token)
	h := nomadHarness(t)
	createVaultWithASecret(t, h)
	n := newFakeNomad(t)
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/agent/members" {
			w.Header().Set("X-Nomad-Index", "1")
			json.NewEncoder(w).Encode(map[string]any{"ServerRegion": "global", "Members": []map[string]any{{
				"Name": "s1-" + r.Header.Get("X-Nomad-Token") + ".global", "Status": "alive",
				"Tags": map[string]string{"build": "1.10.5", "region": "global"}}}})
			return
		}
		inner.ServeHTTP(w, r)
	})
	t.Setenv("NOMAD_ADDR", n.srv.URL)
	for _, args := range [][]string{{"nomad", "register", "--dry-run", "vault"}, {"nomad", "register", "vault"}} {
		code, out, errOut := h.runReported(args...)
		if code != ExitOK || !strings.Contains(errOut, "run a version before 1.11.1") {
			t.Fatalf("precondition: volctl %s: exit %d\nstdout: %s\nstderr: %s\nwant it done, warning that Nomad's servers erase the volume's secrets", strings.Join(args, " "), code, out, errOut)
		}
		if strings.Contains(out+errOut, token) {
			t.Errorf("volctl %s shows the ACL token Nomad echoed into a server's name:\n%s", strings.Join(args, " "), errOut)
		}
	}
}
