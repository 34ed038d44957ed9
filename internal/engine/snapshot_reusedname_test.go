package engine

import "testing"

// A snapshot created without a name, then deregistered (volctl forgets it; the plugin keeps
// it), then another created without a name in the same second, or after the clock stepped back
// to that second: the derived name was the volume's and the second's alone, so the second
// create sent the first one's name, and the plugin, idempotent by name, answered with the
// snapshot it already had. volctl recorded the old snapshot, its data from before, as the one
// just asked for. Each derived name now carries a nonce, as a create's does (createName).
func TestSnapshotWithoutANameAfterOneForgottenIsANewSnapshot(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil) // its clock stands still: every create is in one second
	first := h.snapshot("")
	if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", first.ID); err != nil {
		t.Fatal(err)
	}
	second := h.snapshot("")
	if second.ID == first.ID || second.Name == first.Name {
		t.Fatalf("the second snapshot is the first one again (ID %q, name %q; the first's %q, %q): the plugin answered the reused name with the snapshot it kept",
			second.ID, second.Name, first.ID, first.Name)
	}
	if n := len(h.mem.Snapshots()); n != 2 {
		t.Errorf("the plugin holds %d snapshots, want 2", n)
	}
}
