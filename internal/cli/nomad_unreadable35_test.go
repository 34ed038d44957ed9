package cli

import (
	"net/http"
	"strings"
	"testing"
)

// What answers a registration in a way volctl cannot take as Nomad's OK — a 200 whose body is
// not JSON (a page), or JSON of another shape, or a 400 echoing the token — leaves the handover mark as Nomad's
// copy has it, asked afterwards: Nomad has the volume (it took the registration whatever it
// answered), the mark stays, settled; Nomad has none after a 200 it did not say was an OK, the
// mark stays unsettled (the registration may yet be applied), and after a 4xx, which applies
// nothing, it goes. Never "local" while Nomad has it, and the error names the volume and what
// answered, without the token.
func TestNomadRegisterAnsweredUnreadablyMarksAsNomadHasIt(t *testing.T) {
	const token = "acl-t0ken-of-the-test-5511"
	t.Setenv("NOMAD_TOKEN", token)
	for _, tc := range []struct {
		name           string
		status         int
		body           string
		applied        bool
		marked, unsett bool
		says           string
	}{
		{"a page, not applied", 200, "<html>signed in as " + token + "</html>", false, true, true, "not Nomad's JSON"},
		{"JSON of another shape, applied", 200, `{"Warnings": 5}`, true, true, false, "not Nomad's JSON"},
		{"a 400, applied", 400, "bad request: " + token, true, true, false, "400"},
		{"a 400, not applied", 400, "bad request", false, false, false, "400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
				if tc.applied {
					a.vols["default/db"] = true // under a.mu, held while the hook runs
				}
				if tc.status == 200 {
					return answerOK(w, tc.body)
				}
				return tc.status, tc.body
			})
			_, _, err := registerIn(h, a)
			if err == nil || !strings.Contains(err.Error(), `volume "db"`) || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), token) {
				t.Errorf("register: %v\nwant an error naming the volume and %q, without the token", err, tc.says)
			}
			info, verr := h.e.Volume(h.ctx, "db")
			if verr != nil {
				t.Fatal(verr)
			}
			marked, unsettled := info.Handover != nil, info.Handover != nil && info.Handover.Unsettled
			if marked != tc.marked || unsettled != tc.unsett {
				t.Errorf("Nomad has the volume: %v; marked %v (unsettled %v), want marked %v (unsettled %v): %v", a.has("default", "db"), marked, unsettled, tc.marked, tc.unsett, err)
			}
		})
	}
}
