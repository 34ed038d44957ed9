package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/store"
)

// TestNotFoundOfAVolumeDeletedHereSaysWhen: a command on a volume another volctl, the agent or
// a script deleted or deregistered (three releases at once, the two that read after the first's
// commit) said only "not found", and the command line added that volctl may have looked in
// another state dir. The error now says what the event log last recorded ending it, and when,
// stays a not-found (exit 1), and is told apart (IsNotFoundHere) so that no other state dir is
// suggested. An ID never here says nothing of the kind, and a plugin deregistered is told the same way.
func TestNotFoundOfAVolumeDeletedHereSaysWhen(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	h.create(volume("logs"))
	h.claim(ClaimRequest{VolumeID: "logs", Alloc: "a1"})
	if err := h.e.DeleteVolume(h.ctx, "db"); err != nil {
		t.Fatal(err)
	}
	h.release("logs", "a1")
	h.create(volume("again"))
	if err := h.e.DeleteVolume(h.ctx, "again"); err != nil {
		t.Fatal(err)
	}
	h.create(volume("again"))
	if _, err := h.e.DeregisterVolume(h.ctx, "logs", false); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		what string
		run  func() error
		says string // "" for nothing of the kind
	}{
		{"status of a deleted volume", func() error { _, err := h.e.Volume(h.ctx, "db"); return err }, `(the event log says, just now: volume "db" deleted)`},
		{"claim of a deleted volume", func() error { _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a2"}); return err }, `volume "db" not found (the event log says, just now: volume "db" deleted)`},
		{"release on a deregistered volume", func() error { _, err := h.e.Release(h.ctx, "logs", "a1"); return err }, `(the event log says, just now: volume "logs" deregistered)`},
		{"a volume never here", func() error { _, err := h.e.Volume(h.ctx, "zzzzzz"); return err }, ""},
		// What is missing is something else than the volume, made again under a deleted one's
		// ID: that end is not this volume's.
		{"something of a volume made again under a deleted one's ID", func() error {
			return nearStoredID(h.ctx, h.e, store.VolumeIDs, "again", notFoundf("no such claim on volume %q", "again"))
		}, ""},
	} {
		err := tt.run()
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want a not-found", tt.what, err)
			continue
		}
		if tt.says == "" {
			if strings.Contains(err.Error(), "event log") || IsNotFoundHere(err) {
				t.Errorf("%s: %v, want nothing said of an end it never had", tt.what, err)
			}
			continue
		}
		if !strings.Contains(err.Error(), tt.says) || !IsNotFoundHere(err) {
			t.Errorf("%s: %v (ended here: %v), want it to say %q", tt.what, err, IsNotFoundHere(err), tt.says)
		}
	}

	if err := h.e.DeleteVolume(h.ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem", false); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.PluginStatus(h.ctx, "mem")
	if !errors.Is(err, ErrNotFound) || !IsNotFoundHere(err) || !strings.Contains(err.Error(), `(the event log says, just now: plugin "mem" deregistered`) {
		t.Errorf("status of a plugin deregistered: %v, want it to say when the event log has it deregistered", err)
	}
}
