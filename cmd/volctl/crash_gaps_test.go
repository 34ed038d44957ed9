package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// The crash tests of round 29: the steps between two durable writes of `volume create`,
// `volume delete` and the snapshot commands that no crash test covered before (a restore from a
// snapshot, a clone, the delete of a volume whose create was interrupted, the delete of a
// snapshot still being created). Each kills volctl there, runs `volctl reconcile`, and checks
// that nothing was lost: the plugin and the records agree, and what the user asked for can be
// finished by the same command again.

// fromSpec writes a create spec for volume id of the "hp" plugin restored from snapshot (key
// "snapshot_id") or cloned from a volume (key "clone_id"), and returns its path.
func fromSpec(t *testing.T, id, key, source string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "volume.hcl")
	src := fmt.Sprintf("id = %q\nname = %q\ntype = \"csi\"\nplugin_id = \"hp\"\ncapacity_min = \"1MiB\"\n%s = %q\n"+
		"capability {\n  access_mode = %q\n  attachment_mode = \"file-system\"\n}\n", id, id, key, source, spec.SingleNodeWriter)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCrashInARestoreOrAClone kills `volume create` of a volume restored from a snapshot, and of
// one cloned from a volume, once its intent is recorded, once CreateVolume answered and once the
// volume is recorded: while it is being created the snapshot (or the source volume) cannot be
// deleted from under it, and `volctl reconcile`, or the same create again, finishes it; the
// same create once more changes nothing. The plugin ends with exactly the volumes volctl
// records. Before, the clone's source volume was deleted from under its interrupted create,
// which then failed every reconcile for good (NOT_FOUND for the source), and the same create of
// a clone again was refused as a change of clone_id (the spec's volctl ID compared with the
// storage ID recorded), the way out its errors give refused with it.
func TestCrashInARestoreOrAClone(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newSnapshotEnv(t)
	env.ok("volume", "snapshot", "create", "vol", "snap")
	snapID := env.snapshots()["snap"].ID
	for _, from := range []struct{ key, source string }{{"snapshot_id", snapID}, {"clone_id", "vol"}} {
		for _, fp := range []string{"create:intent", "rpc:CreateVolume", "create:ready"} {
			for _, finish := range []string{"reconcile", "create"} {
				t.Run(from.key+"/"+fp+"/"+finish, func(t *testing.T) {
					env.t = t
					id := strings.NewReplacer("_id", "", ":", "-").Replace(from.key + "-" + fp + "-" + finish)
					path := fromSpec(t, id, from.key, from.source)
					env.crash(bin, fp, "volume", "create", path)
					if fp != "create:ready" {
						switch from.key {
						case "snapshot_id":
							if out, err := env.run(nil, "volume", "snapshot", "delete", "hp", snapID, "--yes"); err == nil {
								t.Fatalf("the snapshot %s was deleted while volume %s was being restored from it:\n%s", snapID, id, out)
							}
						case "clone_id":
							if out, err := env.run(nil, "volume", "delete", "vol", "--yes"); err == nil {
								t.Fatalf("volume vol was deleted while volume %s was being cloned from it:\n%s", id, out)
							}
						}
					}
					switch finish {
					case "reconcile":
						env.ok("reconcile")
					case "create":
						env.ok("volume", "create", path)
					}
					env.checkInvariants()
					if got := strings.TrimSpace(env.ok("volume", "status", id, "--jq", ".state")); got != "ready" {
						t.Fatalf("after %s, volume %s is %q, want ready", finish, id, got)
					}
					env.ok("volume", "create", path) // the same spec again changes nothing
					env.checkInvariants()
				})
			}
		}
	}
}

// TestCrashInADeleteOfAnInterruptedCreate: a create killed once CreateVolume answered (the
// plugin made the volume, volctl recorded no ID), then `volume delete` of it killed at each of
// its steps: after the CreateVolume it sends again to learn the ID, once it recorded the answer,
// once it recorded the delete, after DeleteVolume. Reconcile and the same delete again leave
// neither the volume nor its record: the storage is never left on the plugin with nothing
// recording it.
func TestCrashInADeleteOfAnInterruptedCreate(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newSnapshotEnv(t)
	for _, fp := range []string{"rpc:CreateVolume", "create:ready", "delete:intent", "rpc:DeleteVolume"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			id := "d-" + strings.NewReplacer(":", "-").Replace(fp)
			env.crash(bin, "rpc:CreateVolume", "volume", "create", writeVolumeSpec(t, id, spec.SingleNodeWriter))
			env.crash(bin, fp, "volume", "delete", id, "--yes")
			env.ok("reconcile")
			env.checkInvariants()
			if _, err := env.run(nil, "volume", "status", id); err == nil {
				env.ok("volume", "delete", id, "--yes")
			}
			env.checkInvariants()
			if out, err := env.run(nil, "volume", "status", id); err == nil {
				t.Fatalf("volume %s is still there after the delete again:\n%s", id, out)
			}
		})
	}
}

// TestCrashInADeleteOfAPendingSnapshot: a snapshot create killed once its intent was recorded,
// before CreateSnapshot, then `snapshot delete` of it by name killed after the CreateSnapshot it
// sends to learn the ID, and after its DeleteSnapshot. Reconcile and the same delete again
// (by name, then by ID once the name finds nothing pending) leave neither the snapshot nor a
// record of it.
func TestCrashInADeleteOfAPendingSnapshot(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newSnapshotEnv(t)
	for _, fp := range []string{"rpc:CreateSnapshot", "check:DeleteSnapshot"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			name := "p-" + strings.NewReplacer(":", "-").Replace(fp)
			env.crash(bin, "snapshot:intent", "volume", "snapshot", "create", "vol", name)
			env.crash(bin, fp, "volume", "snapshot", "delete", "hp", name, "--yes")
			env.ok("reconcile")
			if s, ok := env.snapshots()[name]; ok {
				ref := name
				if s.ID != "" {
					ref = s.ID
				}
				env.ok("volume", "snapshot", "delete", "hp", ref, "--yes")
			}
			for n, s := range env.snapshots() {
				if n == name || (s.Listed && !s.Recorded) {
					t.Fatalf("after the delete again, the plugin or volctl still has %+v", s)
				}
			}
			env.ok("reconcile")
		})
	}
}

// TestCloneOfAVolumeBeingDeletedIsRefused: a `volume delete` killed once it recorded the delete,
// then a create cloning that volume, killed once its own intent is recorded (armed at
// create:intent). The clone is refused before anything is recorded, naming the source being
// deleted: before, it was recorded, and reconcile, which finishes creates and deletes in the
// order of the volumes' IDs, deleted the source first and then sent the clone's CreateVolume,
// answered NOT_FOUND for the source at every pass for good.
func TestCloneOfAVolumeBeingDeletedIsRefused(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newSnapshotEnv(t)
	env.crash(bin, "delete:intent", "volume", "delete", "vol", "--yes")
	out, err := env.runBinary(bin, []string{engine.FailpointEnv + "=create:intent"}, "volume", "create", fromSpec(t, "zclone", "clone_id", "vol"))
	if err == nil || killed(err) || !strings.Contains(out, `volume "vol", the clone_id of volume "zclone", is being deleted`) {
		t.Fatalf("create of a clone of a volume being deleted: %v\n%s\nwant it refused, naming the source being deleted", err, out)
	}
	env.ok("reconcile")
	env.checkInvariants()
	for _, id := range []string{"vol", "zclone"} {
		if out, err := env.run(nil, "volume", "status", id); err == nil {
			t.Fatalf("volume %s is there after reconcile:\n%s", id, out)
		}
	}
}

// TestCloneByStorageIDOfAVolumeBeingDeletedIsRefused is TestCloneOfAVolumeBeingDeletedIsRefused
// with the clone naming its source by the source's storage ID (clone_id = its external_id).
// Before, only the volctl ID was checked: the clone was recorded, reconcile deleted the source
// first, and the clone's CreateVolume was NOT_FOUND for the source at every pass for good.
func TestCloneByStorageIDOfAVolumeBeingDeletedIsRefused(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newSnapshotEnv(t)
	ext := strings.TrimSpace(env.ok("volume", "status", "vol", "--jq", ".external_id"))
	env.crash(bin, "delete:intent", "volume", "delete", "vol", "--yes")
	out, err := env.runBinary(bin, []string{engine.FailpointEnv + "=create:intent"}, "volume", "create", fromSpec(t, "zclone", "clone_id", ext))
	if err == nil || killed(err) || !strings.Contains(out, fmt.Sprintf(`volume "vol" (storage ID %q), the clone_id of volume "zclone", is being deleted`, ext)) {
		t.Fatalf("create of a clone by storage ID %s of a volume being deleted: %v\n%s\nwant it refused, naming the source being deleted", ext, err, out)
	}
	env.ok("reconcile")
	env.ok("reconcile")
	env.checkInvariants()
}

// TestCloneCreatedAgainAfterItsSourceIsDeleted: a finished clone's source deleted (which a
// finished clone allows), then the same `volume create` of the clone again, which changes
// nothing. Before, the spec's clone_id (the source's volctl ID) was resolved again, to nothing,
// and compared with the storage ID recorded: refused as a change of clone_id.
func TestCloneCreatedAgainAfterItsSourceIsDeleted(t *testing.T) {
	t.Parallel()
	env := newSnapshotEnv(t)
	path := fromSpec(t, "c", "clone_id", "vol")
	env.ok("volume", "create", path)
	env.ok("volume", "create", path)
	env.ok("volume", "delete", "vol", "--yes")
	if out, err := env.run(nil, "volume", "create", path); err != nil {
		t.Fatalf("the same create of clone c again, after its source was deleted: %v\n%s", err, out)
	}
	env.checkInvariants()
}

// TestCrashExpandNodeOwedThenRelease kills `volume expand` of a claimed volume once the new size
// and the node expansion it owes are committed, before NodeExpandVolume; the claim is then
// released rather than reconciled. The debt outlives the claim, and the next claim's publish
// sends it, at its own target, and clears it: the file system is never left at the old size
// with nothing owing it.
func TestCrashExpandNodeOwedThenRelease(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env, mem, _ := newClaimedMemEnv(t)
	owed := env.nodeExpansionOwed
	env.crash(bin, "expand:node-owed", "volume", "expand", "vol", "--size", "2MiB")
	env.ok("volume", "release", "vol", "--alloc", "a")
	if got := owed(); got != "2097152" {
		t.Fatalf("after the release, node expansion owed %q, want 2097152 still owed", got)
	}
	target := strings.TrimSpace(env.ok("volume", "claim", "vol", "--alloc", "b"))
	reqs := csitest.Requests[csi.NodeExpandVolumeRequest](mem)
	if got := owed(); got != "0" || len(reqs) != 1 || reqs[0].VolumePath != target || reqs[0].CapacityMin != 2<<20 {
		t.Fatalf("after the next claim: owed %q, NodeExpandVolume %+v; want it sent at %s and nothing owed", got, reqs, target)
	}
	env.ok("volume", "release", "vol", "--alloc", "b")
	env.checkInvariants()
}
