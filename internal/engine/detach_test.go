package engine

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A forced detach returns its warnings for the caller to show and does not log them too:
// the command line prints each returned warning, so logging them printed everything twice.
func TestForceDetachReturnsWarningsWithoutLoggingThem(t *testing.T) {
	h := newHarness(t, nil)
	var logs bytes.Buffer
	h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("Detach(force): %v", err)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "forced detach") {
		t.Fatalf("Warnings = %q, want the forced-detach warning first", res.Warnings)
	}
	if len(res.Released) != 1 || res.Released[0].Alloc != "a" {
		t.Errorf("Released = %+v, want alloc a's claim", res.Released)
	}
	if strings.Contains(logs.String(), "forced detach") {
		t.Errorf("the warnings were logged as well as returned:\n%s", logs.String())
	}
}
