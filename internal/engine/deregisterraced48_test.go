package engine

import (
	"strings"
	"testing"
)

// TestCommandThatWaitedForADeregisterDoesNotSayDeleted: a command that waits for the volume's
// lock while another volctl deregisters the volume finds it gone, and says it was deleted or
// deregistered meanwhile (gone meanwhile: no advice to look in another state dir). Before, it
// said the volume "was deleted by another volctl meanwhile (its `volctl volume delete` held the
// volume ...)", of a volume no delete touched, whose storage is still there. The other
// process's deregistration holds the lock at its failpoint while this one's deregister, delete,
// expand or detach waits. (A claim is admitted without the lock, before the deregistration's
// write, which then refuses it for the claim: both say what happened.)
func TestCommandThatWaitedForADeregisterDoesNotSayDeleted(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(h *harness) error
	}{
		{"deregister", func(h *harness) error { _, err := h.e.DeregisterVolume(h.ctx, "v", false); return err }},
		{"delete", func(h *harness) error { return h.e.DeleteVolume(h.ctx, "v") }},
		{"expand", func(h *harness) error { _, err := h.e.ExpandVolume(h.ctx, "v", 2<<30, 0); return err }},
		{"detach", func(h *harness) error { _, err := h.e.Detach(h.ctx, "v", false); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.create(volume("v"))
			other := h.otherProcess()
			gate, held := make(chan struct{}), make(chan struct{})
			other.failpointHook = func(name string) {
				if name == "deregister:locked" {
					close(held)
					<-gate
				}
			}
			deregistered := make(chan error, 1)
			go func() { _, err := other.DeregisterVolume(h.ctx, "v", false); deregistered <- err }()
			<-held
			ctx, waiting := whenWaitingForAnyLock(h.ctx)
			h.ctx = ctx
			done := make(chan error, 1)
			go func() { done <- tc.run(h) }()
			select {
			case <-waiting:
			case err := <-done:
				close(gate)
				t.Fatalf("the %s returned before it waited for the deregistration: %v", tc.name, err)
			}
			close(gate)
			if err := <-deregistered; err != nil {
				t.Fatalf("the other process's deregistration: %v", err)
			}
			err := <-done
			if err == nil || !IsGoneMeanwhile(err) || !strings.Contains(err.Error(), `volume "v" was deleted or deregistered by another volctl meanwhile`) ||
				strings.Contains(err.Error(), "volctl volume delete") {
				t.Errorf("the %s that waited for another volctl's deregistration: %v\nwant it gone meanwhile, deleted or deregistered, naming no delete", tc.name, err)
			}
		})
	}
}
