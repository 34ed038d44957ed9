package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/store"
)

// The event log keeps what an older volctl wrote: a handover's and a take-back's address as
// that version showed it, with a key-only user, a query's token, a token as a query key or
// path segment (before round 34), a lower-case secret (?opensesame=, /opensesame/, shown
// until round 35). `volctl events`, its --json and the dashboard (Events and Dashboard both)
// showed each as written. Each is shown now as a mark's address is (ShownNomadAddress), the
// message around it as it was.
func TestOldEventsShowNoNomadAddressSecret(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	const host = "http://nomad.example:4646"
	old := map[string]string{
		"volume \"db\" handed over to Nomad at " + host + "/?token=s3cr3tqv":                                                                                       "volume \"db\" handed over to Nomad at " + host + "/?token=xxxxx",
		"volume \"db\" handed over to Nomad at http://k3yOfTheGateway4411@nomad.example:4646 despite 1 live local claim(s) (forced)":                               "volume \"db\" handed over to Nomad at http://xxxxx@nomad.example:4646 despite 1 live local claim(s) (forced)",
		"volume \"db\" taken back from Nomad at " + host + "/v1/s3cretTOKEN9/: deregistered from Nomad at " + host + "/v1/s3cretTOKEN9/":                           "volume \"db\" taken back from Nomad at " + host + "/v1/xxxxx/: deregistered from Nomad at " + host + "/v1/xxxxx/",
		"volume \"db\" handed over to Nomad at " + host + "/opensesame/?opensesame=":                                                                               "volume \"db\" handed over to Nomad at " + host + "/xxxxx/?xxxxx",
		"ControllerUnpublishVolume of volume \"db\" from node \"n1\" not sent: the volume is handed over to Nomad at " + host + "/?opensesame=, whose allocations": "ControllerUnpublishVolume of volume \"db\" from node \"n1\" not sent: the volume is handed over to Nomad at " + host + "/?xxxxx, whose allocations",
		// As volctl writes them now: unchanged.
		"volume \"db\" handed over to Nomad at http://xxxxx@nomad.example:4646/nomad/v1/xxxxx/?region=xxxxx&xxxxx": "volume \"db\" handed over to Nomad at http://xxxxx@nomad.example:4646/nomad/v1/xxxxx/?region=xxxxx&xxxxx",
		"volume \"db\" taken back from Nomad at unix:///run/nomad/api.sock: forced, without asking Nomad":          "volume \"db\" taken back from Nomad at unix:///run/nomad/api.sock: forced, without asking Nomad",
		"plugin \"hp\" registered (Nomad at the gate)":                                                             "plugin \"hp\" registered (Nomad at the gate)",
	}
	h.update(func(tx *store.Tx) error {
		for msg := range old {
			if err := tx.Events().Append(&store.Event{Kind: "nomad-handover", VolumeID: "db", Message: msg}); err != nil {
				return err
			}
		}
		return nil
	})
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "nomad-handover"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.e.Dashboard(h.ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, ev := range append(evs, d.Events...) {
		shown[ev.Message] = true
		for _, secret := range []string{"s3cr3tqv", "k3yOfTheGateway4411", "s3cretTOKEN9", "opensesame"} {
			if strings.Contains(ev.Message, secret) {
				t.Errorf("an old event is shown with the address's secret %s: %s", secret, ev.Message)
			}
		}
	}
	for was, want := range old {
		if !shown[want] {
			t.Errorf("the event %q is not shown as %q", was, want)
		}
	}
}
