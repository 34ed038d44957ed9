package cli

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// runAdvice runs, in order, each backquoted command of advice that it knows (against the fake
// Nomads by their addresses, NOMAD_ADDR=ADDR naming which; none: at), and fails the test at the
// first that fails: advice printed by volctl must run as written.
func runAdvice(t *testing.T, h *cliHarness, advice string, at *fakeNomad, nomads ...*fakeNomad) {
	t.Helper()
	cmds := regexp.MustCompile("`([^`]*)`").FindAllStringSubmatch(advice, -1)
	if len(cmds) == 0 {
		t.Fatalf("no command in the advice: %s", advice)
	}
	for _, m := range cmds {
		cmd := m[1]
		n := at
		for { // the settings before the command: NOMAD_ADDR names the Nomad, the others are its defaults here
			word, rest, ok := strings.Cut(cmd, " ")
			name, value, isSetting := strings.Cut(word, "=")
			if !ok || !isSetting || !strings.HasPrefix(name, "NOMAD_") {
				break
			}
			switch value = strings.Trim(value, "'"); name {
			case "NOMAD_ADDR":
				n = nil
				for _, x := range nomads {
					if x.srv.URL == value {
						n = x
					}
				}
				if n == nil {
					t.Fatalf("advice %q names no Nomad of the test", m[1])
				}
			case "NOMAD_NAMESPACE":
				if value != "default" {
					t.Fatalf("advice %q names namespace %q, the test's volume is in the default one", m[1], value)
				}
			default:
				t.Fatalf("advice %q sets %s, which the test does not know", m[1], name)
			}
			cmd = rest
		}
		// A mark naming no region: the nomad CLI's command unsets NOMAD_REGION (the agent's
		// own region), as the test's shell has none.
		cmd = strings.TrimPrefix(cmd, "env -u NOMAD_REGION ")
		switch {
		case strings.HasPrefix(cmd, "nomad volume deregister") && strings.HasSuffix(cmd, " db"):
			// nomad volume deregister of a volume Nomad does not have fails ("volume not found").
			if !n.has("default", "db") {
				t.Errorf("advice `%s` fails: Nomad at %s has no volume db to deregister\nadvice: %s", m[1], n.srv.URL, advice)
			}
			n.mu.Lock()
			delete(n.vols, "default/db")
			n.mu.Unlock()
		case cmd == "volctl nomad register db":
			if _, _, err := registerIn(h, n); err != nil {
				t.Fatalf("advice `%s` fails: %v\nadvice: %s", m[1], err, advice)
			}
		case cmd == "volctl nomad release db":
			if _, err := runNomadRelease(h, n.client, nil); err != nil {
				t.Fatalf("advice `%s` fails: %v\nadvice: %s", m[1], err, advice)
			}
		default:
			t.Logf("advice `%s` not run", m[1])
		}
	}
}

// A volume whose registration at Nomad A ended without Nomad saying how (a 500 volctl does not
// know, then A's 404: its mark unsettled), registered next with NOMAD_ADDR at Nomad B: refused,
// handed over elsewhere, as documented. Its advice to take it back from A ("take it back from
// there first") must work as written. It says `nomad volume deregister` there, then `volctl nomad
// release`: the first had nothing to deregister, and the release refused A's 404 while the
// mark is unsettled, as was fixed for the same advice given to a claim
// (TestClaimOfAnInterruptedHandoverSaysWhatWorks). It names the registration again at A first
// now (HandoverInfo.TakeBackCommands). Found by helper review67.
func TestElsewhereAdviceOfAnUnsettledMarkWorks(t *testing.T) {
	h := nomadHarness(t)
	a, b := newFakeNomad(t), newFakeNomad(t)
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		return http.StatusInternalServerError, "rpc error: EOF"
	})
	if _, _, err := registerIn(h, a); err == nil || !handedOver(t, h) {
		t.Fatalf("register answered 500: %v (marked: %v), want an error and the mark kept", err, handedOver(t, h))
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || !hs[0].Unsettled {
		t.Fatalf("mark after a lost registration: %+v, want unsettled", hs)
	}
	a.setOnPut(nil) // Nomad A answers again

	_, _, err := registerIn(h, b)
	if ExitCode(err) != ExitConflict || err == nil || !strings.Contains(err.Error(), "already handed over to Nomad at "+a.srv.URL) {
		t.Fatalf("register at B of a volume handed over to A: %v, want exit 4 naming A", err)
	}
	_, advice, ok := strings.Cut(err.Error(), "take it back from there first")
	if !ok {
		t.Fatalf("refusal gives no way to take it back: %v", err)
	}
	advice, _, _ = strings.Cut(advice, "), or hand it over there again")
	runAdvice(t, h, advice, a, a, b)
	if handedOver(t, h) {
		t.Errorf("after the advice %q, run as written, volume db is still marked handed over to A", advice)
	}
}

// Nomad failing the question which versions its servers run otherwise than by a 403 (a 500:
// the agent's RPC to its servers failing; a proxy before Nomad that passes only the volume and
// plugin API answering 404): volctl has nothing to go by, as for a token without node read
// (TestNomadRegisterWithoutNodeReadSaysItCouldNotCheck), but said nothing at all, as of a
// Nomad that keeps a volume's secrets, which a Nomad before 1.11.1 then erased at its next
// event-stream event without a word. It says it could not tell, and why. Found by helper
// review67.
func TestNomadRegisterSaysItCouldNotTellWhenNomadFailsTheServersQuestion(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
	}{
		{"Nomad's 500", http.StatusInternalServerError, "rpc error: failed to get conn: dial tcp 10.0.0.1:4647: i/o timeout"},
		{"a proxy's 404", http.StatusNotFound, "404 page not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := nomadHarness(t)
			if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "sec", Name: "sec", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
				Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
				Secrets:      spec.Secrets{"token": "s3cret-value"}}); err != nil {
				t.Fatal(err)
			}
			n := newFakeNomad(t)
			inner := n.srv.Config.Handler
			n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/agent/members" {
					http.Error(w, c.body, c.status)
					return
				}
				inner.ServeHTTP(w, r)
			})
			for _, dryRun := range []bool{true, false} {
				ios, _, _, errOut := iostreams.Test()
				err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"sec"}, DryRun: dryRun})
				if err != nil {
					t.Fatalf("nomad register sec (dry run %v): %v", dryRun, err)
				}
				if said := errOut.String(); !strings.Contains(said, "27176") {
					t.Errorf("nomad register sec (dry run %v), Nomad failing /v1/agent/members with %d %q: stderr %q\nwant it to say it could not tell whether Nomad's servers erase the volume's secrets (hashicorp/nomad#27176), as it says for a 403", dryRun, c.status, c.body, said)
				}
			}
		})
	}
}
