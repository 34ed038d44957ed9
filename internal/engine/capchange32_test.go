package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A snapshot volctl records (being created, made, or being deleted) whose plugin comes back
// from a restart without CREATE_DELETE_SNAPSHOT, × the next command (reconcile, snapshot
// delete): nothing is sent, and the refusal says the plugin lost the capability, names the
// snapshot, and names both ways out (the capability back; `volume snapshot deregister`, which
// then forgets it). Before, reconcile reported "plugin "mem" cannot create snapshots (no
// CREATE_DELETE_SNAPSHOT controller capability)" every pass and the delete "cannot delete
// snapshots", naming neither; volume creates had this (TestInterruptedCreateThroughAPluginThatLostCreateDelete).
func TestSnapshotOfAPluginThatLostCreateDeleteSnapshot(t *testing.T) {
	pending := func(h *harness) string { return pendingSnapshot(h.t, h) }
	for _, tc := range []struct {
		name string
		// leave makes the snapshot's record, returning the name the refusal must name.
		leave func(h *harness) string
		next  func(h *harness, name string) error
	}{
		{"being created, reconcile", pending, reconcileProblem},
		{"being created, delete", pending, deleteSnapshot},
		{"made, delete", func(h *harness) string { return h.snapshot("made").ID }, deleteSnapshot},
		{"delete recorded, reconcile", func(h *harness) string {
			id := h.snapshot("deleting").ID
			h.faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
			if err := h.e.DeleteSnapshot(h.ctx, "mem", id, nil); err == nil {
				h.t.Fatal("delete with every answer lost succeeded")
			}
			return id
		}, reconcileProblem},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := snapshotHarness(t, nil)
			name := tc.leave(h)
			h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteSnapshot = false })

			err := tc.next(h, name)
			if err == nil {
				t.Fatal("nothing refused")
			}
			for _, want := range []string{`plugin "mem" no longer has the controller capability CREATE_DELETE_SNAPSHOT`, `"` + name + `"`,
				"volctl volume snapshot deregister mem " + name, "start the plugin with that capability again"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal %q does not say %s", err, want)
				}
			}
			if n := strings.Count(err.Error(), "snapshot deregister"); n != 1 {
				t.Errorf("the refusal %q names the deregister %d times, want once", err, n)
			}
			if rpcs := h.rpcs(); len(rpcs) != 0 {
				t.Errorf("sent %v to a plugin without CREATE_DELETE_SNAPSHOT", rpcs)
			}
			// The way out it names forgets it.
			if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", name); err != nil {
				t.Fatal(err)
			}
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile after the deregister: %v (%+v)", err, rep.Problems)
			}
		})
	}
}

func reconcileProblem(h *harness, _ string) error {
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil {
		return nil
	}
	if len(rep.Problems) != 1 {
		h.t.Fatalf("reconcile problems %+v, want one", rep.Problems)
	}
	return errorString(rep.Problems[0].Message)
}

func deleteSnapshot(h *harness, name string) error {
	return h.e.DeleteSnapshot(h.ctx, "mem", name, nil)
}

type errorString string

func (e errorString) Error() string { return string(e) }
