package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A volume named for the user its secrets hold (a cifs share "share-<user>", as the metrics'
// and the lists' tests name them) is shown "share-[REDACTED]" by `volctl events` while the
// volume exists. Deleting it takes the secret out of the state, and the store's forget
// (store/forget.go, forgetGone) scrubs the event log's messages of it, "nothing would scrub
// it from the log that outlives it" otherwise (docs/architecture.md). It scrubbed the message
// column only: the same rows' volume_id (and alloc, plugin_id) kept the value, and after the
// delete `volctl events` of another process printed it whole, beside a message that masks it.
// Found by helper review68.
func TestEventsAfterTheDeleteShowNoSecretInTheirVolumeColumn(t *testing.T) {
	const user = "rv68alicewonder"
	h := newCLIHarness(t)
	ctx := context.Background()
	if _, err := h.e.CreateVolume(ctx, spec.Volume{ID: "share-" + user, Name: "share-" + user, Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"username": user, "password": "pw-rv68-longer"},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	run := func(e *engine.Engine) string { return eventsJSON(t, e, engine.EventFilter{}) }
	if s := run(h.e); strings.Contains(s, user) {
		t.Fatalf("premise: events before the delete show the secret already:\n%s", s)
	}
	if err := h.e.DeleteVolume(ctx, "share-"+user); err != nil {
		t.Fatal(err)
	}
	other := openEngine(t, h.state) // another volctl process: nothing let go in it
	if s := run(other); strings.Contains(s, user) {
		var lines []string
		for _, l := range strings.Split(s, "},{") {
			if strings.Contains(l, user) {
				lines = append(lines, l)
			}
		}
		t.Errorf("after the volume was deleted, events show the secret value %q (the messages masked, the volume_id column not):\n%s", user, strings.Join(lines, "\n"))
	}
}

// eventsJSON is `volctl events --json` on engine e, filtered as filter says: its stdout and
// stderr.
func eventsJSON(t *testing.T, e *engine.Engine, filter engine.EventFilter) string {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	if err := eventsRun(context.Background(), &EventsOptions{IO: ios, Engine: func(context.Context) (*engine.Engine, error) { return e, nil },
		Now: nowFunc, Filter: filter, Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatalf("events: %v\n%s%s", err, out, errOut)
	}
	return out.String() + errOut.String()
}
