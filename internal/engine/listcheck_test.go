package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// The ListVolumes that checks a DeleteVolume answered OK runs under the plugin's controller
// lock, which every other create, delete, publish and snapshot of the plugin waits for. A
// plugin that pages slowly and without end (fresh tokens, each page a while) held it for up to
// 10,000 pages, each within the 5 s timeout: hours. The check is bounded, in time
// (Config.ListCheck) and in pages (maxCheckPages), and a listing cut short reads "not checked":
// the delete the plugin answered OK still succeeds, the lock is given back, and the event and
// the warning say why it was not checked.
func TestDeleteCheckAgainstASlowEndlessListingIsBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		delay time.Duration
		check time.Duration
		says  string
	}{
		{name: "slow pages", delay: 20 * time.Millisecond, check: 300 * time.Millisecond, says: "did not finish within 300ms"},
		{name: "fast pages", check: time.Minute, says: "more than 1000 pages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes = true })
			var logs bytes.Buffer
			h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})), ListCheck: tc.check})
			ext := h.create(volume("v")).ExternalID
			h.faults.ResetCounts() // the delete's check's pages are counted, not the create's check of its answer
			h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Delay: tc.delay, FirstPage: true,
				NextToken: func(start string) string { return start + "." }})
			done := make(chan error, 1)
			go func() { done <- h.e.DeleteVolume(h.ctx, "v") }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("delete: %v; want it to succeed (the plugin answered OK)", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("delete still running after 60 s, %d ListVolumes pages in: the check holds the plugin's controller lock without bound",
					h.faults.Calls(csi.RPCListVolumes))
			}
			if n := h.faults.Calls(csi.RPCListVolumes); n > maxCheckPages {
				t.Errorf("%d ListVolumes pages sent by the check; want at most %d", n, maxCheckPages)
			}
			if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
				t.Errorf("volume v still recorded: %v", err)
			}
			if _, ok := h.mem.Volume(ext); ok {
				t.Errorf("the plugin still has %q", ext)
			}
			msgs := h.eventMessages("volume-delete", "v")
			if !strings.Contains(msgs, "not checked that the plugin no longer lists it") || !strings.Contains(msgs, tc.says) {
				t.Errorf("the delete event %q; want it to say it was not checked: %s", msgs, tc.says)
			}
			if !strings.Contains(logs.String(), "could not be checked") {
				t.Errorf("no warning that the listing could not be checked; log: %q", logs.String())
			}
		})
	}
}
