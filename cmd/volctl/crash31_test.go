package main

import (
	"strings"
	"testing"
)

// TestCrashInReconcilesSnapshotDelete kills `volctl reconcile` while it finishes a recorded
// snapshot delete (round 30's reconcileSnapshotDeletes): once it recorded its turn, before
// DeleteSnapshot, and once DeleteSnapshot answered, before the record was forgotten. The user's
// delete was killed first, leaving the delete recorded. Whatever the kill, the snapshot stays
// recorded (a restore from it refused) until a reconcile finishes: then the plugin has it no
// more, volctl records neither it nor its delete, and the next reconcile has nothing to do.
func TestCrashInReconcilesSnapshotDelete(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newSnapshotEnv(t)
	for _, fp := range []string{"snapshot:deleting", "check:DeleteSnapshot"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			name := "r-" + strings.NewReplacer(":", "-").Replace(fp)
			env.ok("volume", "snapshot", "create", "vol", name)
			s, ok := env.snapshots()[name]
			if !ok || !s.Recorded || !s.Listed {
				t.Fatalf("snapshot after create: %+v (found %v), want recorded and listed", s, ok)
			}
			env.crash(bin, "snapshot:deleting", "volume", "snapshot", "delete", "hp", s.ID, "--yes")
			env.crash(bin, fp, "reconcile")
			got, ok := env.snapshots()[name]
			if !ok || !got.Recorded || got.Listed == (fp == "check:DeleteSnapshot") {
				t.Fatalf("after reconcile was killed at %s: %+v (found %v), want still recorded, listed only if DeleteSnapshot was not sent", fp, got, ok)
			}
			restore := fromSpec(t, "r-"+name, "snapshot_id", s.ID)
			if out, err := env.run(nil, "volume", "create", restore); err == nil || !strings.Contains(out, "is being deleted") {
				t.Fatalf("restore from snapshot %s whose delete reconcile was killed in: %v\n%s\nwant it refused naming the delete", s.ID, err, out)
			}
			if out := env.ok("reconcile"); !strings.Contains(out, s.ID) {
				t.Errorf("reconcile does not say it deleted snapshot %s:\n%s", s.ID, out)
			}
			for n, got := range env.snapshots() {
				if n == name || got.ID == s.ID {
					t.Fatalf("after reconcile: %+v still there; want the delete finished", got)
				}
			}
			env.settled("after the snapshot delete was finished")
		})
	}
}
