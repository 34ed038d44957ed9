package engine

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestSecretEchoedIntoARepeatedNextTokenIsNotRecorded: `volume snapshot delete PLUGIN ID
// --secret token=VALUE`, the value the user's, not the state's; a hostile plugin answered
// DeleteSnapshot OK and echoed the secret it was sent with the check's ListSnapshots into a
// next_token it repeated. volctl's own words for that check's failure quote the token, and went
// into the "deleted" event and the engine's warning log unscrubbed (only the plugin's messages
// are scrubbed of a request's secrets, and events at display of the state's alone): `volctl
// events` printed the secret. Found by helper review72.
func TestSecretEchoedIntoARepeatedNextTokenIsNotRecorded(t *testing.T) {
	const secret = "R0tatedCred-9xQ"
	var logBuf bytes.Buffer
	h, _ := snapshotHarness(t, nil)
	h.open(Config{Now: func() time.Time { return snapshotClock },
		Logger: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	s := h.snapshot("nightly")
	// The plugin's next_token carries what it was sent (the hostile echo).
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{FirstPage: true,
		NextToken: func(string) string { return "cursor:" + secret }})
	if _, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", s.ID, spec.Secrets{"token": secret}); err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the delete's error shows the --secret value: %v", err)
	}
	evs, err := h.e.EventsRedacted(h.ctx, 0, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if strings.Contains(ev.Message, secret) {
			t.Errorf("event %q (%s) shows the --secret value given to the delete: %s", ev.Kind, ev.RPC, ev.Message)
		}
	}
	if strings.Contains(logBuf.String(), secret) {
		t.Errorf("the engine's log shows the --secret value: %s", logBuf.String())
	}
}
