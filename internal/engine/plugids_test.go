package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A plugin with LIST_VOLUMES answers DeleteVolume OK and still lists the volume (it deletes
// in the background, or lies): volctl must not forget a volume whose storage is still there
// and say it was deleted. The volume stays deleting, the error says so and what finishes it;
// once the plugin no longer has it, the delete again (or reconcile) forgets it.
func TestDeleteAnsweredOKWhileStillListedKeepsTheVolumeDeleting(t *testing.T) {
	t.Parallel()
	for _, finish := range []string{"delete", "reconcile"} {
		t.Run(finish, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.DeleteLater = true })
			ext := h.create(volume("v")).ExternalID
			err := h.e.DeleteVolume(h.ctx, "v")
			if err == nil || !strings.Contains(err.Error(), "still lists volume") || !strings.Contains(err.Error(), "stays marked deleting") {
				t.Fatalf("delete of a volume the plugin still lists: %v; want an error saying it is still listed and kept deleting", err)
			}
			if v, verr := h.e.Volume(h.ctx, "v"); verr != nil || v.State != string(store.VolumeDeleting) || v.ExternalID != ext {
				t.Fatalf("volume v after the delete: %+v, %v; want it kept, deleting %q (the plugin still has it)", v, verr, ext)
			}
			if msgs := h.eventMessages("volume-delete", "v"); !strings.Contains(msgs, "still lists") || strings.Contains(msgs, `volume "v" deleted`) {
				t.Errorf("events say %q; want the delete not finished, not deleted", msgs)
			}
			// Asked again while the plugin still has it: still kept.
			if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
				t.Fatal("second delete while the plugin still lists the volume succeeded")
			}
			h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DeleteLater = false })
			if finish == "delete" {
				if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
					t.Fatalf("delete once the plugin deletes: %v", err)
				}
			} else if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
				t.Fatalf("reconcile once the plugin deletes: %+v, %v", rep, err)
			}
			if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
				t.Errorf("volume v still recorded after the plugin deleted it: %v", err)
			}
			if _, ok := h.mem.Volume(ext); ok {
				t.Errorf("the plugin still has %q", ext)
			}
		})
	}
}

// Whether the plugin still lists a deleted volume is checked only when it can be: a ListVolumes
// that fails, runs into its timeout or pages without end does not turn a delete the plugin
// answered OK into a failure; the volume is forgotten, and the event and a warning say it was
// not checked. A plugin without LIST_VOLUMES is not asked.
func TestDeleteWhoseListingCannotBeCheckedStillDeletes(t *testing.T) {
	// Serial: its sub-second Short timeout covers RPCs it does not test (the fingerprint's),
	// which tests running beside it on a loaded machine made it miss.
	for _, tc := range []struct {
		name   string
		fault  func(f *csitest.Faults)
		noList bool
	}{
		{name: "error", fault: func(f *csitest.Faults) { f.FailAlways(csi.RPCListVolumes, codes.Internal) }},
		{name: "timeout", fault: func(f *csitest.Faults) { f.Hang(csi.RPCListVolumes) }},
		{name: "repeated token", fault: func(f *csitest.Faults) {
			f.Inject(csi.RPCListVolumes, csitest.Fault{NextToken: func(string) string { return "again" }})
		}},
		{name: "no LIST_VOLUMES", noList: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes = !tc.noList })
			var logs bytes.Buffer
			h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
				Timeouts: csi.Timeouts{Short: 200 * time.Millisecond, Long: 5 * time.Second}})
			ext := h.create(volume("v")).ExternalID
			if tc.fault != nil {
				tc.fault(h.faults)
			}
			if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
				t.Fatalf("delete: %v; want it to succeed (the plugin answered OK)", err)
			}
			if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
				t.Errorf("volume v still recorded: %v", err)
			}
			if _, ok := h.mem.Volume(ext); ok {
				t.Errorf("the plugin still has %q", ext)
			}
			msgs := h.eventMessages("volume-delete", "v")
			if tc.noList {
				if n := h.faults.Calls(csi.RPCListVolumes); n != 0 {
					t.Errorf("ListVolumes sent %d time(s) to a plugin without LIST_VOLUMES", n)
				}
				if strings.Contains(msgs, "not checked") || logs.Len() != 0 {
					t.Errorf("a plugin that cannot list was reported unchecked: events %q, log %q", msgs, logs.String())
				}
				return
			}
			if !strings.Contains(msgs, "not checked that the plugin no longer lists it") {
				t.Errorf("the delete event does not say it was not checked: %q", msgs)
			}
			if !strings.Contains(logs.String(), "could not be checked") {
				t.Errorf("no warning that the listing could not be checked; log: %q", logs.String())
			}
		})
	}
}

// recordedSnapshot says whether volctl records snapshot id of plugin mem.
func (h *harness) recordedSnapshot(id string) bool {
	h.t.Helper()
	var found bool
	h.update(func(tx *store.Tx) error {
		_, err := tx.Snapshots().Get("mem", id)
		found = err == nil
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	return found
}

// A plugin answers DeleteSnapshot OK and still lists the snapshot (ListSnapshots, which volctl
// sends anyway): its record is kept, not forgotten while the snapshot is there, and the delete
// fails saying so; once the plugin deletes it, the delete again forgets it. A listing that
// fails leaves the OK as it is, saying it was not checked.
func TestDeleteSnapshotAnsweredOKWhileStillListedKeepsItsRecord(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.DeleteLater = true })
	s := h.snapshot("keep")
	err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
	if err == nil || !strings.Contains(err.Error(), "still lists snapshot") || !strings.Contains(err.Error(), "stays recorded") {
		t.Fatalf("delete of a snapshot the plugin still lists: %v; want an error saying it is still listed and kept", err)
	}
	if !h.recordedSnapshot(s.ID) {
		t.Fatalf("snapshot %s forgotten while the plugin still has it", s.ID)
	}
	if msgs := h.eventMessages("snapshot-delete", "db"); !strings.Contains(msgs, "not finished") || strings.Contains(msgs, "deleted\"") {
		t.Errorf("events say %q; want the delete not finished", msgs)
	}
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DeleteLater = false })
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Fatalf("delete once the plugin deletes: %v", err)
	}
	if h.recordedSnapshot(s.ID) || len(h.mem.Snapshots()) != 0 {
		t.Errorf("after the delete: recorded %v, plugin holds %+v", h.recordedSnapshot(s.ID), h.mem.Snapshots())
	}

	// The listing fails: the plugin's OK stands, and the event says it was not checked.
	s = h.snapshot("unchecked")
	h.faults.FailAlways(csi.RPCListSnapshots, codes.Internal)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Fatalf("delete whose listing fails: %v; want it to succeed (the plugin answered OK)", err)
	}
	if h.recordedSnapshot(s.ID) {
		t.Errorf("snapshot %s still recorded", s.ID)
	}
	if msgs := h.eventMessages("snapshot-delete", "db"); !strings.Contains(msgs, "not checked that the plugin no longer lists it") {
		t.Errorf("the delete event does not say it was not checked: %q", msgs)
	}
}

// A plugin answers ListSnapshots filtered by snapshot_id with NOT_FOUND for a snapshot it no
// longer has, as some do: that is not listed, and the delete finishes.
func TestDeleteSnapshotListedNotFoundFinishes(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("gone")
	h.faults.FailAlways(csi.RPCListSnapshots, codes.NotFound)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if msgs := h.eventMessages("snapshot-delete", "db"); strings.Contains(msgs, "not checked") {
		t.Errorf("a NOT_FOUND listing reads as unchecked: %q", msgs)
	}
}

// A plugin answers CreateSnapshot of volume db with a new snapshot of another volume (its
// source_volume_id another's): it is not recorded as db's, and nothing is deleted (it is not
// this request's snapshot, and perhaps someone's).
func TestCreateSnapshotAnsweredWithAnotherSourceIsNotRecorded(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	other := h.create(volume("other"))
	theirs, err := h.pluginClient().CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: other.ExternalID, Name: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	h.createSnapshotAnsweredWith(theirs.ID, "of another volume", other.ExternalID)
}

// createSnapshotAnsweredWith has the plugin answer CreateSnapshot with snapshot id, another
// volume's, and checks that snapshot "mine" of volume db is refused as a conflict whose message
// holds each of want, recorded as nothing, and that no DeleteSnapshot is sent (the snapshot is
// not this request's, and perhaps someone's).
func (h *harness) createSnapshotAnsweredWith(id string, want ...string) {
	h.t.Helper()
	h.mem.AnswerSnapshotWith(id)
	_, err := h.e.CreateSnapshot(h.ctx, "db", "mine", nil)
	if !errors.Is(err, ErrConflict) || slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(err.Error(), w) }) {
		h.t.Fatalf("snapshot answered with another volume's: %v; want a conflict naming %q", err, want)
	}
	if h.recordedSnapshot(id) {
		h.t.Errorf("snapshot %s of another volume recorded as db's", id)
	}
	if n := h.mem.CallCount(csi.RPCDeleteSnapshot); n != 0 {
		h.t.Errorf("DeleteSnapshot sent %d time(s) for a snapshot that is not this request's", n)
	}
}

// A read claim published read-write (by a volctl from before a read claim's target had to be
// a read-only mount) and still mounted: reconcile finds it in the mount table and reports
// it, naming the claim, the target and the way out, every pass until the claim is released; it
// neither unpublishes nor re-publishes it (that would pull the mount from under a running
// alloc), and the claim stays held. A writer's read-write target is no problem.
func TestReconcileReportsAReadClaimMountedReadWrite(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	r := writerAndReader(h)
	h.mounts.mountReadWrite(r.TargetPath)
	h.mem.ResetCalls()
	for pass := 1; pass <= 2; pass++ {
		rep, _ := h.e.Reconcile(h.ctx) // its error says problems remain
		if len(rep.Problems) != 1 || rep.Problems[0].Alloc != "r" ||
			!strings.Contains(rep.Problems[0].Message, "mounted read-write at "+r.TargetPath) ||
			!strings.Contains(rep.Problems[0].Message, "`volctl volume release v --alloc r`") {
			t.Fatalf("reconcile pass %d problems = %+v; want read claim r reported mounted read-write, with the way out", pass, rep.Problems)
		}
	}
	if rpcs := h.rpcs(); len(rpcs) != 0 {
		t.Errorf("reconcile sent %v: the mount is under a running alloc, and must be left", rpcs)
	}
	if live := h.liveClaims("v"); len(live) != 2 {
		t.Fatalf("claims after reconcile = %+v, want both held", live)
	}
	h.release("v", "r")
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("reconcile after the release: %+v, %v; want no problem", rep.Problems, err)
	}
}

// The same with the kernel's mounts: a read claim's target remounted read-write, as an older
// volctl over a plugin that ignores readonly left it, is reported by reconcile and left
// mounted, writable, for the alloc. Real mounts, as root.
func TestReconcileReportsAReadClaimMountedReadWriteOnKernelMounts(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	r := writerAndReader(h)
	remount(t, r.TargetPath, 0)
	h.mem.ResetCalls()
	rep, _ := h.e.Reconcile(h.ctx) // its error says problems remain
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "mounted read-write at "+r.TargetPath) {
		t.Fatalf("reconcile problems = %+v; want read claim r reported mounted read-write", rep.Problems)
	}
	if rpcs := h.rpcs(); len(rpcs) != 0 {
		t.Errorf("reconcile sent %v", rpcs)
	}
	if err := os.WriteFile(filepath.Join(r.TargetPath, "x"), []byte("x"), 0o600); err != nil {
		t.Errorf("the alloc's mount was changed under it: %v", err)
	}
	h.release("v", "r")
	h.release("v", "w")
}

// A create whose first CreateVolume answer is lost (the plugin made the volume; UNAVAILABLE
// came back) is retried under the same CSI name and records the plugin's answer to the retry.
// volctl cannot see whether a plugin that broke CSI's idempotency made a second volume under
// the name (ListVolumes names none); the created event says the answer was resent for and
// names the CSI name, by which the provider's tools find every volume made under it.
func TestCreateWhoseAnswerWasLostSaysWhatItCannotKnow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: 1})
	v := h.create(volume("v"))
	if n := h.faults.Calls(csi.RPCCreateVolume); n != 2 {
		t.Fatalf("CreateVolume sent %d time(s), want 2 (the first answer lost)", n)
	}
	name := v.CSIName
	msgs := h.eventMessages("volume-create", "v")
	if !strings.Contains(msgs, "answer was lost") || !strings.Contains(msgs, `"`+name+`"`) || !strings.Contains(msgs, "cannot see whether") {
		t.Errorf("created event = %q; want it to say an answer was lost, name %q, and what volctl cannot see", msgs, name)
	}
	// A create answered at once says nothing of the kind.
	h.create(volume("w"))
	if msgs := h.eventMessages("volume-create", "w"); strings.Contains(msgs, "answer was lost") {
		t.Errorf("created event of a first-time answer = %q", msgs)
	}
}

// storedControllerCaps is the controller capabilities of plugin mem's stored fingerprint.
func (h *harness) storedControllerCaps() []string {
	h.t.Helper()
	var caps []string
	h.update(func(tx *store.Tx) error {
		p, err := tx.Plugins().Get("mem")
		caps = p.Fingerprint.ControllerCaps
		return err
	})
	return caps
}

// A plugin restarted behind a socket something else holds (systemd socket activation) with
// other capabilities keeps its socket file, whose identity (device, inode, change time) is
// what tells volctl to fingerprint again: the stored fingerprint is reused, the documented
// limit (docs/architecture.md, "Plugins behind a held socket"). No RPC tells an instance from
// another. The documented remedies hold: touching the socket file (its change time) after such
// a restart makes the next process fingerprint the plugin again and see what it now has, and
// so does registering the plugin again.
func TestPluginRestartedBehindAHeldSocketIsFingerprintedAgainOnceTouched(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	if !slices.Contains(h.storedControllerCaps(), "LIST_SNAPSHOTS") {
		t.Fatalf("stored capabilities %v lack LIST_SNAPSHOTS to begin with", h.storedControllerCaps())
	}
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.Controller.ListSnapshots = false }) // the same socket file

	h.open(Config{})
	before := identityRPCs(h.mem)
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if n := identityRPCs(h.mem) - before; n != 0 {
		t.Fatalf("%d identity RPCs with the socket file unchanged: the documented limit no longer holds, update docs/architecture.md", n)
	}

	now := time.Now()
	if err := os.Chtimes(h.socket, now, now); err != nil { // touch(1): a new change time
		t.Fatal(err)
	}
	h.open(Config{})
	h.release("db", "web-0")
	if caps := h.storedControllerCaps(); slices.Contains(caps, "LIST_SNAPSHOTS") {
		t.Errorf("stored capabilities after the socket was touched = %v; want the plugin fingerprinted again, without LIST_SNAPSHOTS", caps)
	}

	// The other remedy: registering the plugin again, the socket file untouched.
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.Controller.ListSnapshots = true })
	h.open(Config{})
	h.registerPlugin("mem", h.socket)
	if caps := h.storedControllerCaps(); !slices.Contains(caps, "LIST_SNAPSHOTS") {
		t.Errorf("stored capabilities after registering again = %v; want LIST_SNAPSHOTS back", caps)
	}
}

// A pending snapshot (its create's answer lost) is deleted by its NAME, the only handle it has:
// the delete learns its ID, records it, and the plugin answers DeleteSnapshot OK while it still
// lists it, so the record is kept. The error's way out must work as written: the record is the
// ID's now, and the name no longer finds it (the delete again by NAME sends DeleteSnapshot for a
// snapshot ID nobody has, whose NOT_FOUND reads as deleted, and leaves the record), so it must
// name the command with the ID, which then forgets it.
func TestDeletePendingSnapshotStillListedSaysHowToFinish(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.DeleteLater, c.SnapshotIDPrefix = true, "snap-" })
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Lost: true})
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil); err == nil {
		t.Fatal("snapshot succeeded with every answer lost")
	}
	h.faults.Clear(csi.RPCCreateSnapshot)
	err := h.e.DeleteSnapshot(h.ctx, "mem", "s1", nil)
	snaps := h.mem.Snapshots()
	if err == nil || len(snaps) != 1 {
		t.Fatalf("delete by name of a pending snapshot the plugin still lists: %v (plugin holds %+v); want it kept", err, snaps)
	}
	id := snaps[0].ID
	want := "`volctl volume snapshot delete mem " + id + "`"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `its name "s1"`) {
		t.Fatalf("delete: %v\nwant the way out named with the snapshot's ID, %s, saying its name no longer finds it", err, want)
	}
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DeleteLater = false })
	if err := h.e.DeleteSnapshot(h.ctx, "mem", id, nil); err != nil {
		t.Fatalf("the way out, %s: %v", want, err)
	}
	if h.recordedSnapshot(id) || len(h.mem.Snapshots()) != 0 {
		t.Errorf("after %s: recorded %v, plugin holds %+v", want, h.recordedSnapshot(id), h.mem.Snapshots())
	}
}

// askedMounts is the kernel's mount table, noting the paths Mounted, which opens and statfs's
// them, is asked about.
type askedMounts struct {
	kernelMounts
	mu    sync.Mutex
	asked []string
}

func (a *askedMounts) Mounted(root, path string) (MountPoint, error) {
	a.mu.Lock()
	a.asked = append(a.asked, path)
	a.mu.Unlock()
	return a.kernelMounts.Mounted(root, path)
}

// A read claim's mount, made long ago, is checked read-only from the mount table, not by
// statfs of its file system: on a hard NFS mount whose server is gone statfs blocks for good,
// and reconcile (the agent's, every minute) with it, holding the volume's lock, so that no
// release of the volume could run either. So is a claim asked again. Real mounts, as root.
func TestReadClaimCheckedWritableFromTheMountTableAlone(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	r := writerAndReader(h)
	remount(t, r.TargetPath, 0)
	asked := &askedMounts{}
	h.open(Config{Mounts: asked})
	rep, _ := h.e.Reconcile(h.ctx) // its error says problems remain
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "mounted read-write at "+r.TargetPath) {
		t.Fatalf("reconcile problems = %+v; want read claim r reported mounted read-write", rep.Problems)
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "mounted read-write at "+r.TargetPath) {
		t.Fatalf("claim again = %v; want a conflict saying r is mounted read-write", err)
	}
	if len(asked.asked) > 0 {
		t.Errorf("reconcile and the claim asked the file system mounted at %q (open, statx, statfs), which a gone server would hang; want the mount table's word only", asked.asked)
	}
	remount(t, r.TargetPath, unix.MS_RDONLY)
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile of the read-only mount = %+v, %v; want no problem", rep.Problems, err)
	}
	h.release("v", "r")
	h.release("v", "w")
}

// writerAndReader makes volume v (multi-node-single-writer) and claims it for a writer, alloc
// w, and a reader, alloc r, whose claim it returns.
func writerAndReader(h *harness) ClaimInfo {
	h.t.Helper()
	h.create(volume("v", capab(spec.MultiNodeSingleWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "w"})
	return h.claim(ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
}

// remount remounts the bind mount at target with flags (0: read-write; unix.MS_RDONLY).
func remount(t *testing.T, target string, flags uintptr) {
	t.Helper()
	if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|flags, ""); err != nil {
		t.Fatalf("remount %s (flags %#x): %v", target, flags, err)
	}
}
