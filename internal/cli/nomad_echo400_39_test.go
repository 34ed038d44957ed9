package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// What answers at NOMAD_ADDR refuses `volctl nomad register` with a 400 that echoes the
// request's body (a validation error quoting its input, a WAF's refusal), the part of it
// that holds the volume's secrets, in the forms such a refusal writes it: as sent, quoted as
// a JSON or Go string, URL-encoded. Run as main runs it, with and without --verbose (its debug
// log and RPC traces), then the
// event log and the volume's status: nothing of a secret anywhere, the
// volume not left marked (a 400 applies nothing), and the refusal still named.
func TestNomadRegister400EchoingTheBodyShowsNoSecretAtTheCLI(t *testing.T) {
	const long, short, flag = `Hunter2&<long>"secret\`, "pw9", "FlagSecret42"
	h := nomadHarness(t)
	// (volctl's own plugin takes no mount flag with a value: the scrubber's tests hold those.)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "sec", Name: "sec", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Secrets:      spec.Secrets{"long": long, "short": short, "flagish": flag},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	leaks := func(s string) []string {
		var found []string
		for _, v := range []string{long, flag, `Hunter2\u0026`, `\u003clong\u003e`, "Hunter2%26", base64.StdEncoding.EncodeToString([]byte(long)),
			`"` + short + `"`, `\"` + short + `\"`, "=" + short} {
			if strings.Contains(s, v) {
				found = append(found, v)
			}
		}
		return found
	}
	for _, echo := range []struct {
		name string
		of   func(body string) string
	}{
		{"as sent", func(b string) string { return "invalid request: " + b }},
		{"JSON-quoted", func(b string) string {
			q, _ := json.Marshal(b)
			return `{"error":"bad volume","request":` + string(q) + `}`
		}},
		{"Go-quoted", func(b string) string { return "decode " + strconv.Quote(b) + ": unexpected field" }},
		{"URL-encoded", func(b string) string { return "rejected body=" + url.QueryEscape(b) }},
	} {
		t.Run(echo.name, func(t *testing.T) {
			a := newFakeNomad(t)
			a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
				a.mu.Lock()
				body := a.puts[len(a.puts)-1]
				a.mu.Unlock()
				// What is shown of an error's body is cut short (the secrets come last in the
				// body): the part that holds them is echoed, as a refusal of that field would.
				var req struct {
					Volumes []struct{ Secrets json.RawMessage }
				}
				if err := json.Unmarshal([]byte(body), &req); err != nil || len(req.Volumes) != 1 || len(leaks(string(req.Volumes[0].Secrets))) == 0 {
					t.Errorf("the registration's body holds none of the volume's secrets (%v): %s", err, body)
					return http.StatusBadRequest, "no"
				}
				return http.StatusBadRequest, echo.of(`{"Secrets":` + string(req.Volumes[0].Secrets) + `}`)
			})
			t.Setenv("NOMAD_ADDR", a.srv.URL)
			t.Setenv("NOMAD_TOKEN", "")
			var shown strings.Builder
			for _, args := range [][]string{{"nomad", "register", "sec"}, {"nomad", "register", "sec", "--verbose"}} {
				code, out, errOut := h.runReported(args...)
				if code != ExitUsage && code != ExitError && code != ExitConflict || !strings.Contains(out+errOut, "bad") && !strings.Contains(out+errOut, "invalid") &&
					!strings.Contains(out+errOut, "unexpected") && !strings.Contains(out+errOut, "rejected") {
					t.Errorf("%v: exit %d, %s%s\nwant it refused, naming Nomad's answer", args, code, out, errOut)
				}
				if !strings.Contains(out+errOut, "400") {
					t.Errorf("%v: %s%s\nwant it to say Nomad answered 400", args, out, errOut)
				}
				fmt.Fprintf(&shown, "%v:\n%s\n%s\n", args, out, errOut)
			}
			if handedOver(t, h) {
				t.Error("a registration refused with a 400 left the volume marked handed over")
			}
			for _, args := range [][]string{{"events", "--json"}, {"events"}, {"volume", "status", "sec", "--json"}, {"nomad", "status", "sec", "--json"}} {
				_, out, errOut := h.runReported(args...)
				fmt.Fprintf(&shown, "%v:\n%s\n%s\n", args, out, errOut)
			}
			if l := leaks(shown.String()); len(l) > 0 {
				t.Errorf("a secret shown (%q):\n%s", l, shown.String())
			}
		})
	}
}
