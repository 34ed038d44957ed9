package hostpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// volumeMode is the permission of a new volume directory. Consumers of any user reach it through
// a bind mount, as with Kubernetes' hostpath driver; the private Root keeps it out of reach
// otherwise.
const volumeMode = 0o777

// ControllerGetCapabilities implements csi.ControllerServer.
func (p *Plugin) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	types := []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
	}
	if p.cfg.EnableAttach {
		// LIST_VOLUMES_PUBLISHED_NODES lets an orchestrator see an attachment it did not make
		// (another volctl state dir's on this root) before it sends ControllerPublishVolume,
		// which answers OK for it, and would take it for its own (engine attachedAlready).
		types = append(types, csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
			csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES)
	}
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for _, t := range types {
		resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}},
		})
	}
	return resp, nil
}

// CreateVolume implements csi.ControllerServer: a new directory, empty or a copy of a snapshot
// or another volume. The same name with a compatible request returns the existing volume.
func (p *Plugin) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	name := req.GetName()
	if name == "" {
		return nil, invalidArg("CreateVolume: name is required")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	required, limit, err := capacityRange(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	if err := p.checkTopology(req.GetAccessibilityRequirements()); err != nil {
		return nil, err
	}
	srcSnap := req.GetVolumeContentSource().GetSnapshot()
	srcVol := req.GetVolumeContentSource().GetVolume()
	if req.GetVolumeContentSource() != nil && srcSnap == nil && srcVol == nil {
		return nil, invalidArg("volume %q: volume_content_source names neither a snapshot nor a volume", name)
	}
	// The source's ID is REQUIRED (CSI): "" is a malformed request, not a source that is
	// missing, nor one an empty volume of the name made with no source matches. Before, it was
	// answered OK with that empty volume where the name was taken, and NOT_FOUND otherwise
	// (TestCloneOfAnEmptySourceIDIsRefusedAsInvalid).
	if srcSnap != nil && srcSnap.GetSnapshotId() == "" || srcVol != nil && srcVol.GetVolumeId() == "" {
		return nil, invalidArg("volume %q: volume_content_source names its snapshot or volume by an empty ID", name)
	}

	if srcSnap != nil || srcVol != nil {
		return p.createCopy(ctx, req, required, limit)
	}
	unlock, err := p.lockNotCreating(ctx, "volume/"+name, p.lockMu)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := p.checkRoot(); err != nil {
		return nil, err
	}
	p.keepReserve()
	if resp, err := p.existingVolume(req, required, limit); resp != nil || err != nil {
		return resp, err
	}
	capacity := required
	if capacity == 0 {
		capacity = limit
	}
	v := p.newVolume(req, capacity)
	err = os.Mkdir(p.volumePath(v.ID), volumeMode)
	if err == nil {
		err = os.Chmod(p.volumePath(v.ID), volumeMode) // past the umask
	}
	if err == nil {
		// On disk, with its mode, before the record that names it is written: a power
		// loss would otherwise leave the record and no directory.
		err = syncDir(p.volumePath(v.ID))
	}
	if err == nil {
		err = syncDir(p.volumesDir())
	}
	if err != nil {
		_ = os.RemoveAll(p.volumePath(v.ID))
		return nil, p.writeFailed(ctx, fmt.Sprintf("volume %q: creating directory", name), "", err)
	}
	return p.recordVolume(ctx, v, nil)
}

// createCopy is CreateVolume of a volume copied from a snapshot or another volume. The source
// is looked up, and the copy started, under lock, so that a DeleteVolume or DeleteSnapshot of
// the source, in this process or another serving the root, either comes before (the source is
// not found) or finds the copy under way (copyingFrom); the copy itself runs under no lock, so
// that every other RPC is answered meanwhile (before, it held mu throughout: with a large
// source every other volume's RPCs timed out, TestCopyLetsOtherRequestsThrough); mu is taken
// again to record the volume.
func (p *Plugin) createCopy(ctx context.Context, req *csi.CreateVolumeRequest, required, limit int64) (*csi.CreateVolumeResponse, error) {
	name := req.GetName()
	key := "volume/" + name
	held, err := p.lockToCopy(ctx, key)
	if err != nil {
		return nil, err
	}
	defer held.release()
	if resp, err := p.existingVolume(req, required, limit); resp != nil || err != nil {
		return resp, err
	}
	srcSnap := req.GetVolumeContentSource().GetSnapshot()
	srcVol := req.GetVolumeContentSource().GetVolume()
	kind, id, size, dir, ok := p.contentSource(srcSnap, srcVol)
	if !ok {
		return nil, notFound("volume %q: source %s %q not found", name, kind, id)
	}
	capacity := required
	if capacity == 0 {
		capacity = limit
	}
	if capacity, err = sizeFromSource(name, kind, id, size, capacity, limit); err != nil {
		return nil, err
	}
	v := p.newVolume(req, capacity)
	run, err := p.startCopy(id, dir)
	if err != nil {
		return nil, p.writeFailed(ctx, fmt.Sprintf("volume %q: copying its source into it", name), dir, err)
	}
	finished := p.markCreating(key)
	held.release()
	hold, err := run(ctx, p.volumePath(v.ID))
	p.mu.Lock()
	defer p.mu.Unlock()
	finished()
	if err != nil {
		_ = os.RemoveAll(p.volumePath(v.ID))
		return nil, p.writeFailed(ctx, fmt.Sprintf("volume %q: copying its source into it", name), dir, err)
	}
	return p.recordVolume(ctx, v, hold)
}

// existingVolume is CreateVolume's answer for a name already created: the volume when the
// request is compatible with it, else ALREADY_EXISTS; nil, nil for a new name. mu is held.
// Found by name in memory, the volume is then read from its record (p.volume), as a snapshot
// is (CreateSnapshot): one another process serving the root deleted is gone, and made again.
// Before, the create answered OK with the deleted ID, whose next NodeStageVolume was NOT_FOUND
// (TestVolumeDeletedByTheOtherProcessIsMadeAgain). Not found so, it is looked for among the
// records the other process made since (learnVolumes).
func (p *Plugin) existingVolume(req *csi.CreateVolumeRequest, required, limit int64) (*csi.CreateVolumeResponse, error) {
	name := req.GetName()
	v := p.state.volumeByName(name)
	if v != nil {
		v, _ = p.volume(v.ID)
	}
	if v == nil {
		p.learnVolumes()
		if v = p.state.volumeByName(name); v != nil {
			v, _ = p.volume(v.ID)
		}
	}
	if v == nil {
		return nil, nil
	}
	srcSnap := req.GetVolumeContentSource().GetSnapshot()
	srcVol := req.GetVolumeContentSource().GetVolume()
	switch {
	case !fits(v.Capacity, required, limit):
		return nil, alreadyExists("volume %q exists with capacity %d bytes, outside the requested range (required %d, limit %d)", name, v.Capacity, required, limit)
	case !maps.Equal(v.Parameters, req.GetParameters()):
		return nil, alreadyExists("volume %q exists with different parameters", name)
	case v.SourceSnapshot != srcSnap.GetSnapshotId() || v.SourceVolume != srcVol.GetVolumeId():
		return nil, alreadyExists("volume %q exists with a different content source", name)
	}
	return &csi.CreateVolumeResponse{Volume: p.csiVolume(v)}, nil
}

// newVolume is the record of the volume req creates, of capacity bytes, under a new ID.
func (p *Plugin) newVolume(req *csi.CreateVolumeRequest, capacity int64) *volume {
	return &volume{
		ID:             newVolumeID(),
		Name:           req.GetName(),
		Capacity:       capacity,
		Parameters:     req.GetParameters(),
		SourceSnapshot: req.GetVolumeContentSource().GetSnapshot().GetSnapshotId(),
		SourceVolume:   req.GetVolumeContentSource().GetVolume().GetVolumeId(),
		CreatedAt:      time.Now().UTC(),
	}
}

// recordVolume saves the record of v, whose directory a create just put in place, and answers
// with it; the directory goes when the record cannot be saved. mu is held.
func (p *Plugin) recordVolume(ctx context.Context, v *volume, held func()) (*csi.CreateVolumeResponse, error) {
	unlock := held // a copy's directory, locked before it was put in place (startCopy)
	if unlock == nil {
		var err error
		if unlock, err = holdNew(p.volumePath(v.ID)); err != nil {
			_ = os.RemoveAll(p.volumePath(v.ID))
			return nil, p.writeFailed(ctx, fmt.Sprintf("volume %q: creating directory", v.Name), "", err)
		}
	}
	defer unlock()
	p.state.Volumes[v.ID] = v
	if err := p.saveVolume(v.ID); err != nil {
		delete(p.state.Volumes, v.ID)
		_ = os.RemoveAll(p.volumePath(v.ID))
		return nil, p.writeFailed(ctx, fmt.Sprintf("volume %q: recording it", v.Name), "", err)
	}
	return &csi.CreateVolumeResponse{Volume: p.csiVolume(v)}, nil
}

// lockToCopy takes lock for a create of key that copies (a clone, a snapshot), once no other
// create of key copies (lockNotCreating), and keeps the reserve; the create releases it before
// its copy runs, and the deferred release then does nothing.
func (p *Plugin) lockToCopy(ctx context.Context, key string) (*heldLock, error) {
	unlock, err := p.lockNotCreating(ctx, key, p.lock)
	if err != nil {
		return nil, err
	}
	p.keepReserve()
	return &heldLock{unlock: unlock}, nil
}

// heldLock is a lock released once, by whichever release comes first.
type heldLock struct{ unlock func() }

func (h *heldLock) release() {
	if h.unlock != nil {
		h.unlock()
		h.unlock = nil
	}
}

// lockMu takes mu alone, as lock would take both: for lockNotCreating.
func (p *Plugin) lockMu(context.Context) (func(), error) {
	p.mu.Lock()
	return p.mu.Unlock, nil
}

// lockNotCreating takes take's lock (lock, or mu alone) once no create of key (markCreating)
// copies: one that does is waited for under no lock, as long as ctx allows, and the name looked
// up again once it is done.
func (p *Plugin) lockNotCreating(ctx context.Context, key string, take func(context.Context) (func(), error)) (func(), error) {
	for {
		unlock, err := take(ctx)
		if err != nil {
			return nil, err
		}
		done, busy := p.creating[key]
		if !busy {
			return unlock, nil
		}
		unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// markCreating notes a create of key under way for lockNotCreating, until the function it
// returns is called, with mu held both times.
func (p *Plugin) markCreating(key string) (finished func()) {
	done := make(chan struct{})
	p.creating[key] = done
	return func() {
		delete(p.creating, key)
		close(done)
	}
}

// contentSource looks up what a new volume copies, the snapshot if one is named, else the
// volume: its kind and ID, and when it exists (ok) its size and directory. p.mu is held.
func (p *Plugin) contentSource(snap *csi.VolumeContentSource_SnapshotSource, vol *csi.VolumeContentSource_VolumeSource) (kind, id string, size int64, dir string, ok bool) {
	if snap != nil {
		sn, ok := p.snapshot(snap.GetSnapshotId())
		if !ok {
			return "snapshot", snap.GetSnapshotId(), 0, "", false
		}
		return "snapshot", sn.ID, sn.Size, p.snapshotPath(sn.ID), true
	}
	v, ok := p.volume(vol.GetVolumeId())
	if !ok {
		return "volume", vol.GetVolumeId(), 0, "", false
	}
	return "volume", v.ID, v.Capacity, p.volumePath(v.ID), true
}

// sizeFromSource is the size of a volume copied from a source of srcSize bytes: never smaller
// than the source, and OUT_OF_RANGE when the limit leaves no room for it.
func sizeFromSource(name, kind, id string, srcSize, capacity, limit int64) (int64, error) {
	if limit > 0 && srcSize > limit {
		return 0, status.Errorf(codes.OutOfRange, "hostpath: volume %q: source %s %q is %d bytes, above the capacity limit %d", name, kind, id, srcSize, limit)
	}
	return max(capacity, srcSize), nil
}

// startCopy starts a copy of the directory src, the volume's or snapshot's id: its partial
// directory, named after id, made and locked (copyingFrom finds it so), and run, which copies
// into it with no lock of the plugin's held and renames the copy to dst, so dst appears
// complete or not at all, then removes the partial directory. run is to be called once.
func (p *Plugin) startCopy(id, src string) (run func(ctx context.Context, dst string) (hold func(), err error), err error) {
	tmp, err := os.MkdirTemp(p.partialDir(), "copy-"+id+"-")
	if err != nil {
		return nil, err
	}
	// Locked while it runs, so that another process starting on this root does not take it
	// for an interrupted copy (clearInterruptedCopies). One that removed it before this lock
	// makes the copy below fail: nothing half-copied is renamed into place.
	unlock, err := lockDir(tmp, 0)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return func(ctx context.Context, dst string) (func(), error) {
		defer os.RemoveAll(tmp)
		defer unlock()
		work := tmp + "/data"
		mounts, err := copyTree(ctx, src, work)
		if err != nil {
			return nil, err
		}
		p.mountsLeftOut("its copy", src, mounts)
		// The copy locked before it is renamed into place, and held, as holdNew holds a new
		// directory, until the caller has recorded it: the lock goes with the directory. Taken
		// only after the rename, a finished copy waiting for the records' lock was unrecorded
		// and unlocked, and a plugin process starting on the root removed it
		// (TestStartDoesNotSweepASnapshotWaitingToBeRecorded).
		held, err := openLocked(work, 0)
		if err != nil {
			return nil, err
		}
		if err := os.Rename(work, dst); err != nil {
			held.Close()
			return nil, err
		}
		// The rename on disk before the record that names dst is written.
		if err := syncDir(filepath.Dir(dst)); err != nil {
			held.Close()
			return nil, err
		}
		return func() { held.Close() }, nil
	}, nil
}

// copyingFrom reports whether a copy of id (a volume's or a snapshot's directory) is under
// way, in this process or another serving the root: a partial directory named after it
// (startCopy) that is locked. A delete of id waits for it: removed while copied, the copy
// failed, or came out with whatever the removal had not reached yet.
func (p *Plugin) copyingFrom(id string) bool {
	paths, _ := filepath.Glob(filepath.Join(p.partialDir(), "copy-"+id+"-*"))
	for _, path := range paths {
		unlock, err := lockDir(path, unix.LOCK_NB)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return true
		}
		if err == nil {
			unlock()
		}
	}
	return false
}

// copyUnderWay is a delete's answer while copyingFrom(id): ABORTED, which the orchestrator
// sends again after a while.
func copyUnderWay(kind, id string) error {
	return status.Errorf(codes.Aborted, "hostpath: %s %q is being copied (a snapshot or a clone of it is being made); send the request again once that is done", kind, id)
}

// mountsLeftOut says, one warning each, which mounts inside the directory dir a walk for what
// (its copy, its stats) left out (walkTree).
func (p *Plugin) mountsLeftOut(what, dir string, mounts []string) {
	for _, m := range mounts {
		p.log.Warn("hostpath: a mount inside a volume's directory is left out of "+what+", as another file system, not the volume's data; "+
			"unmount it (a consumer's mount, or one propagated from its target) to have what is under it included",
			"dir", dir, "mount", m)
	}
}

// writeFailed maps a failure to make or record something new on the plugin's root (what did
// it; src is the directory it copied, "" when none), after what it made was removed: a
// cancelled or expired request keeps its own code, so the orchestrator knows to retry; a root
// with no room (ENOSPC, or a quota's EDQUOT) is RESOURCE_EXHAUSTED, as CSI has a provisioning or
// a snapshot that lacks space, naming the root, what the copy needed and what is free, and what
// to do (the orchestrator words it as space to free; before, it was INTERNAL, "failed
// internally; check its logs"); anything else INTERNAL, naming a read-only root.
func (p *Plugin) writeFailed(ctx context.Context, what, src string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return status.FromContextError(cerr).Err()
	}
	if !noRoom(err) {
		return internal("%s: %v%s", what, err, readOnlyRoot(p.cfg.Root, err))
	}
	need := ""
	if src != "" {
		// Only on this failure: a walk of what was just copied, bounded as the copy was.
		if u, uerr := diskUsage(ctx, src); uerr == nil {
			need = fmt.Sprintf("; the copy needs about %d bytes, what %s holds", u.bytes, src)
		}
	}
	return noRoomStatus(codes.ResourceExhausted, p.cfg.Root, what, need+"; nothing of this request is kept", err)
}

// noRoomStatus is the error, of code (RESOURCE_EXHAUSTED where CSI gives the RPC that code for
// want of room, else INTERNAL), for a write under root that found no room (noRoom), saying
// what did it, then after (what it needed, what is left of the request), what is free and what
// to free.
func noRoomStatus(code codes.Code, root, what, after string, err error) error {
	var st unix.Statfs_t
	free := ""
	if unix.Statfs(root, &st) == nil {
		free = fmt.Sprintf(", %d bytes free on it now", st.Bavail*uint64(st.Bsize))
	}
	return status.Errorf(code,
		"hostpath: %s: %v: no room left on the plugin's root %s (its file system full, or a quota reached)%s%s: "+
			"free space on that file system (delete volumes or snapshots no longer needed, "+
			"or whatever else fills it), then send the request again", what, err, root, free, after)
}

// csiVolume is the CSI view of a volume.
func (p *Plugin) csiVolume(v *volume) *csi.Volume {
	out := &csi.Volume{
		VolumeId:           v.ID,
		CapacityBytes:      v.Capacity,
		AccessibleTopology: []*csi.Topology{p.topology()},
	}
	switch {
	case v.SourceSnapshot != "":
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.SourceSnapshot},
		}}
	case v.SourceVolume != "":
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.SourceVolume},
		}}
	}
	return out
}

// DeleteVolume implements csi.ControllerServer. An unknown ID is already deleted. A volume that
// is still attached or mounted is refused: removing its directory would pull the data out from
// under its consumers.
//
// The directory's removal, a walk as long as the volume has files, runs under no lock: under
// the plugin's lock (its mutex and the lock on meta/ every process serving the root shares)
// the directory is only renamed into partial/ (deleteRecorded), and the record removed; it is
// removed once the lock is released, before the answer, so the room it took is free by then
// (GetCapacity's statfs). Removed under the lock, a large volume's delete held every other
// request, another volume's NodePublishVolume among them, until it timed out
// (TestDeleteOfALargeVolumeLetsOtherRequestsThrough).
func (p *Plugin) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := requireVolumeID("DeleteVolume", id); err != nil {
		return nil, err
	}
	trash, err := p.deleteRecorded(ctx, id)
	if err != nil {
		return nil, err
	}
	if trash == nil {
		// Already gone: what an earlier delete of it left in partial/ (its removal failed, or
		// was cut short by a stop) goes now, unless another request is removing it.
		p.removeDeleted(id)
		return &csi.DeleteVolumeResponse{}, nil
	}
	if err := trash.remove(); err != nil {
		return nil, internal("volume %q: its record is removed, and its directory (moved to %s) is not: %v%s%s; "+
			"the request sent again, or the plugin's next start, tries again, and logs what it cannot remove", id, trash.path, err, readOnlyRoot(p.cfg.Root, err), unremovable(trash.path, err))
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// deletedDir is a deleted volume's directory, renamed into partial/ (deletedPrefix) and locked
// there until removed: another process starting on the root does not take it for an
// interrupted one (clearInterruptedCopies), nor does a delete of its ID sent again
// (removeDeleted).
type deletedDir struct {
	path string
	held *os.File // the directory's own lock, nil when a consumer's process holds it (consumersLock)
	lock *os.File // its lock file beside it (trashLockSuffix), which only plugin processes open
}

// remove removes the directory, then its lock file, and releases their locks.
func (d *deletedDir) remove() error {
	defer d.held.Close()
	defer d.lock.Close()
	if err := os.RemoveAll(d.path); err != nil {
		return err
	}
	_ = os.Remove(d.path + trashLockSuffix)
	return nil
}

// trashLockSuffix names the lock file beside a deleted volume's or snapshot's directory in
// partial/ (partial/delete-ID-RANDOM.lock), held by the process removing it. The directory's own
// lock could be a consumer's (any process of theirs may flock the directory they are given):
// taken for a plugin process's, a delete cut short past a consumer's lock was left in partial/
// by every start and every delete again for as long as that process lived
// (TestDeleteCutShortPastAConsumersLockIsFinishedByTheNextStartOrTheRequestAgain).
const trashLockSuffix = ".lock"

// lockTrash creates and locks the lock file of trash directory path (trashLockSuffix), before the
// directory is moved there.
func lockTrash(path string) (*os.File, error) {
	f, err := os.OpenFile(path+trashLockSuffix, os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// takeTrash takes what a delete left at path in partial/ to remove it: by its lock file where it
// has one (EWOULDBLOCK: a plugin process is removing it), else, left by a volctl before the lock
// files, by the directory's own lock.
func takeTrash(path string) (*deletedDir, error) {
	if _, err := os.Lstat(path + trashLockSuffix); err == nil {
		lk, err := lockTrash(path)
		if err != nil {
			return nil, err
		}
		return &deletedDir{path: path, lock: lk}, nil
	}
	held, err := openLocked(path, unix.LOCK_NB)
	if err != nil {
		return nil, err
	}
	return &deletedDir{path: path, held: held}, nil
}

// deletedPrefix begins the name in partial/ of a deleted volume's directory awaiting removal,
// delete-<id>-<random>: never a copy's (copy-<id>-..., startCopy, which copyingFrom looks for).
const deletedPrefix = "delete-"

// deleteRecorded is DeleteVolume's part under the plugin's lock: it refuses a volume in use,
// moves its directory into partial/ (the same file system: one atomic rename, made durable
// before the record goes) and removes its record. It returns the directory to remove once the
// lock is released, nil for a volume already gone. Directory first, record second: a crash in
// between leaves a record whose directory is gone, which the next DeleteVolume finishes, and a
// directory in partial/, which the next start removes (clearInterruptedCopies); a crash during
// the removal leaves only the latter.
func (p *Plugin) deleteRecorded(ctx context.Context, id string) (*deletedDir, error) {
	unlockState, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockState()
	v, ok := p.volume(id)
	if !ok {
		return nil, nil
	}
	if err := p.checkNotInUse(v); err != nil {
		return nil, err
	}
	if p.copyingFrom(id) {
		return nil, copyUnderWay("volume", id)
	}
	dir := p.volumePath(id)
	if err := checkNothingMountedIn(dir); err != nil {
		return nil, failedPrecondition("volume %q: %v", id, err)
	}
	trash, err := p.moveAside("volume", id, dir, " (recording it as it creates it)")
	if err != nil {
		return nil, err
	}
	delete(p.state.Volumes, id)
	if err := p.saveOrUndo("", id, nil); err != nil {
		if trash != nil {
			_ = trash.remove()
		}
		return nil, err
	}
	return trash, nil
}

// moveAside moves dir, the directory of what (a "volume" or "snapshot") id, locked, into
// partial/ under deletedPrefix, and makes the rename durable (dir's parent and partial/ synced)
// before the caller removes the record: a power loss never leaves the record gone and the
// directory still under its name. nil for a directory gone already (an earlier delete's,
// ended between the rename and the record). held says what else may hold the directory, for
// the refusal when another process does. Called under the plugin's lock.
func (p *Plugin) moveAside(what, id, dir, held string) (*deletedDir, error) {
	f, err := openLocked(dir, unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) && what == "volume" {
		f, err = p.consumersLock(id, dir)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return nil, status.Errorf(codes.Aborted, "hostpath: %s %q: its directory %s is held by another plugin process serving the root%s; send the request again", what, id, dir, held)
	case err != nil:
		return nil, internal("%s %q: %v", what, id, err)
	}
	trash := &deletedDir{path: filepath.Join(p.partialDir(), deletedPrefix+id+"-"+randomHex(8)), held: f}
	// Its lock file first: a kill after the rename leaves the directory with its lock file,
	// which the next start or delete takes, whoever holds the directory's own lock.
	if trash.lock, err = lockTrash(trash.path); errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		// No inode left for it: a delete, what frees them, was refused when the root ran out
		// (TestDeleteSucceedsOnARootWithNoInodesLeft). It goes on with the directory's own lock,
		// as before the lock files (takeTrash takes such a leftover by it).
		p.log.Warn("hostpath: no room for the lock file of a delete's removal: the directory's own lock tells it", "what", what, "id", id, "err", err)
		trash.lock, err = nil, nil
	}
	if err != nil {
		f.Close()
		return nil, internal("%s %q: locking its removal: %v%s", what, id, err, readOnlyRoot(p.cfg.Root, err))
	}
	if err := os.Rename(dir, trash.path); err != nil {
		f.Close()
		_ = os.Remove(trash.path + trashLockSuffix)
		trash.lock.Close()
		return nil, internal("%s %q: moving its directory out of the way to remove it: %v%s", what, id, err, readOnlyRoot(p.cfg.Root, err))
	}
	for _, d := range []string{filepath.Dir(dir), p.partialDir()} {
		if err := syncDir(d); err != nil {
			// Renamed: the directory is removed whatever the answer (the delete sent again
			// finds it gone and removes the record).
			_ = trash.remove()
			return nil, internal("%s %q: %v%s", what, id, err, readOnlyRoot(p.cfg.Root, err))
		}
	}
	return trash, nil
}

// consumersLockWait is how long a delete waits for a recorded volume's directory lock before it
// takes the holder for a consumer's process (consumersLock).
const consumersLockWait = 250 * time.Millisecond

// consumersLock is moveAside's lock of recorded volume id's directory dir, found held. Under the
// records' lock no plugin process holds a recorded volume's directory but for a moment (a
// process starting on the root looks at a directory recorded since it read the records,
// sweepUnrecorded; a create's hold ends before its record is let go): held past that, the holder
// is a process of the volume's consumers, which may open and flock the directory it is given
// (`flock /data backup.sh`, its target unmounted lazily under it). Before, every delete was
// refused ABORTED, "held by another plugin process", while that process lived
// (TestDeleteIsNotHeldOffByAConsumersLockOnItsVolume). The delete goes on without the lock,
// logging who may hold it; nil, nil then. A wait that sees the lock taken is the lock.
func (p *Plugin) consumersLock(id, dir string) (*os.File, error) {
	deadline := time.Now().Add(consumersLockWait)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		f, err := openLocked(dir, unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return f, err
		}
	}
	p.log.Warn("hostpath: deleting a volume whose directory a process holds locked (a consumer's, no plugin process's: `lslocks` names it); it keeps what it opened, and the directory is removed", "volume", id, "path", dir)
	return nil, nil
}

// removeDeleted removes what deletes of volume id left in partial/ (an earlier request whose
// removal failed): each directory whose lock it takes at once; one held is being removed by the
// request that moved it there, or by another process. A failure is logged, the answer OK: the
// volume is gone, and the next start removes what is left.
func (p *Plugin) removeDeleted(id string) {
	if !isVolumeID(id) && !isSnapshotID(id) { // an ID becomes a glob pattern
		return
	}
	paths, _ := filepath.Glob(filepath.Join(p.partialDir(), deletedPrefix+id+"-*"))
	for _, path := range paths {
		if strings.HasSuffix(path, trashLockSuffix) {
			continue // its directory's
		}
		d, err := takeTrash(path)
		if err != nil {
			continue
		}
		if err := d.remove(); err != nil {
			p.log.Warn("hostpath: removing what a delete left of a volume's directory"+unremovable(path, err), "volume", id, "path", path, "err", err)
		}
	}
}

// checkNotInUse refuses to delete a volume that is controller-published or mounted on this node.
func (p *Plugin) checkNotInUse(v *volume) error {
	if nodes := slices.Sorted(maps.Keys(v.Attachments)); len(nodes) > 0 {
		if !p.cfg.EnableAttach {
			// Recorded by a run with --enable-attach; this one answers ControllerUnpublishVolume
			// UNIMPLEMENTED, and a CO told it has no PUBLISH_UNPUBLISH_VOLUME sends none: the
			// advice alone left the volume undeletable for good
			// (TestDeleteAfterARestartWithoutEnableAttachAdvisesAStepThatWorks).
			return failedPrecondition("volume %q is in use: published to node %q by this plugin while it ran with --enable-attach, which it runs without now: "+
				"serve it with --enable-attach again and send ControllerUnpublishVolume first", v.ID, nodes[0])
		}
		return failedPrecondition("volume %q is in use: published to node %q (ControllerUnpublishVolume first)", v.ID, nodes[0])
	}
	if err := p.checkNotMounted("", v); err != nil {
		return err
	}
	// The recorded paths are not the only ones: a mount moves with the directory it is in, and
	// the directory holding a staging path and a target renamed or moved (an alloc directory)
	// left the records leading nowhere while the binds of the volume's directory still showed
	// it there; the delete removed the data under them
	// (TestDeleteRefusesAVolumeStillMountedWhereItsRecordsNoLongerLead). The mount table names
	// every mount of it, by the directory each shows.
	at, err := mountsShowing(p.volumePath(v.ID))
	if err != nil {
		return internal("volume %q: looking for its mounts: %v", v.ID, err)
	}
	if len(at) > 0 {
		return failedPrecondition("volume %q is in use: its directory is mounted at %q, a path its records do not name "+
			"(the directory holding its staging path or target renamed or moved since it was mounted?): "+
			"unmount it (`umount %s`) once nothing uses it, then send the request again", v.ID, at[0], at[0])
	}
	return nil
}

// checkNotMounted refuses what needs volume v unmounted on this node (rpc names the request,
// "" for a delete): a staging or target the records name that is still a mount point. Only
// the mount table is taken at its word: a path whose mount went without the node RPCs (a
// forced detach unmounts volctl's own paths itself) holds nothing.
func (p *Plugin) checkNotMounted(rpc string, v *volume) error {
	if rpc != "" {
		rpc += ": "
	}
	if v.Staging != nil {
		if mounted, _ := p.mounter.IsMountPoint(v.Staging.Path); mounted {
			return failedPrecondition("%svolume %q is in use: staged at %q (NodeUnstageVolume first)", rpc, v.ID, v.Staging.Path)
		}
	}
	for _, target := range slices.Sorted(maps.Keys(v.Targets)) {
		if mounted, _ := p.mounter.IsMountPoint(target); mounted {
			return failedPrecondition("%svolume %q is in use: published at %q (NodeUnpublishVolume first)", rpc, v.ID, target)
		}
	}
	return nil
}

// ControllerPublishVolume implements csi.ControllerServer (with --enable-attach): it records the
// attachment and hands out a publish_context that NodeStageVolume and NodePublishVolume require.
func (p *Plugin) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if !p.cfg.EnableAttach {
		return nil, status.Error(codes.Unimplemented, "hostpath: ControllerPublishVolume needs --enable-attach")
	}
	id, node := req.GetVolumeId(), req.GetNodeId()
	if err := requireVolumeID("ControllerPublishVolume", id); err != nil {
		return nil, err
	}
	if node == "" {
		return nil, invalidArg("ControllerPublishVolume: volume %q: node_id is required", id)
	}
	if _, err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	unlockState, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockState()
	v, err := p.lookupVolume("", id)
	if err != nil {
		return nil, err
	}
	if node != p.cfg.NodeID {
		return nil, notFound("node %q not found: this plugin serves node %q", node, p.cfg.NodeID)
	}
	if a, ok := v.Attachments[node]; ok {
		return &csi.ControllerPublishVolumeResponse{PublishContext: publishContext(node, a)}, nil
	}
	if limit, n := p.cfg.MaxVolumes, int64(p.state.attachedCount(node)); limit > 0 && n >= limit {
		return nil, status.Errorf(codes.ResourceExhausted, "hostpath: volume %q: node %q already has %d volumes published (max volumes %d)", id, node, n, limit)
	}
	a := attachment{Token: newToken()}
	if v.Attachments == nil {
		v.Attachments = map[string]attachment{}
	}
	v.Attachments[node] = a
	if err := p.saveAttachmentOrUndo(id, func() { delete(v.Attachments, node) }); err != nil {
		return nil, err
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: publishContext(node, a)}, nil
}

func publishContext(node string, a attachment) map[string]string {
	return map[string]string{PublishContextNode: node, PublishContextAttachment: a.Token}
}

// ControllerUnpublishVolume implements csi.ControllerServer. Unknown volumes and nodes are
// already unpublished; an empty node_id unpublishes from every node. A volume still staged or
// published on this host is refused (FAILED_PRECONDITION) when the attachment removed is this
// node ID's, or any while this node ID has none (its mounts made under an earlier one): CSI has
// the CO send this RPC only
// after NodeUnpublishVolume and NodeUnstageVolume, and one sent before (a second orchestrator
// on the root, whose alloc was refused the staging the first one's claim holds) would pull the
// attachment from under the mounts, and the publish_context the node RPCs still to come carry
// with it. Nomad tries a refused one again by itself, and frees its claim once it succeeds.
func (p *Plugin) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if !p.cfg.EnableAttach {
		return nil, status.Error(codes.Unimplemented, "hostpath: ControllerUnpublishVolume needs --enable-attach")
	}
	id := req.GetVolumeId()
	if err := requireVolumeID("ControllerUnpublishVolume", id); err != nil {
		return nil, err
	}
	unlockState, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockState()
	v, ok := p.volume(id)
	if !ok || len(v.Attachments) == 0 {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	node := req.GetNodeId()
	if node != "" {
		if _, ok := v.Attachments[node]; !ok {
			return &csi.ControllerUnpublishVolumeResponse{}, nil
		}
	}
	// The plugin mounts on this host only: its mounts rest on this node ID's attachment, or,
	// with none under it, on one under another ID: a plugin started again under another
	// --node-id (a host renamed, served under --node-id $(hostname)) still holds the mounts its
	// earlier run made under the old ID, and the unpublish of that ID pulled the attachment
	// from under them, the node RPCs still to come with its publish_context refused
	// (TestControllerUnpublishOfAnEarlierNodeIDsAttachmentIsRefusedWhileMountedHere). Another
	// ID's attachment beside this one's holds none of them.
	if _, ours := v.Attachments[p.cfg.NodeID]; !ours || node == "" || node == p.cfg.NodeID {
		if err := p.checkNotMounted("ControllerUnpublishVolume", v); err != nil {
			return nil, err
		}
	}
	before := maps.Clone(v.Attachments)
	if node != "" {
		delete(v.Attachments, node)
	} else {
		clear(v.Attachments)
	}
	if err := p.saveTeardownOrUndo("", id, func() { v.Attachments = before }); err != nil {
		return nil, err
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

// ValidateVolumeCapabilities implements csi.ControllerServer.
func (p *Plugin) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	id := req.GetVolumeId()
	if err := requireVolumeID("ValidateVolumeCapabilities", id); err != nil {
		return nil, err
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, invalidArg("ValidateVolumeCapabilities: volume %q: volume_capabilities are required", id)
	}
	if err := p.checkRoot(); err != nil {
		return nil, err // not "not found": the records are where the root went
	}
	p.mu.Lock()
	v, ok := p.volume(id)
	var params map[string]string
	if ok {
		params = v.Parameters
	}
	p.mu.Unlock()
	if !ok {
		return nil, notFound("volume %q not found", id)
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	if len(req.GetParameters()) > 0 && !maps.Equal(params, req.GetParameters()) {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: "hostpath: the volume was created with different parameters"}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

// ListVolumes implements csi.ControllerServer. Pages are in volume ID order and a token is the ID
// the next page starts at, so volumes created or deleted between pages neither repeat nor
// shift an index.
func (p *Plugin) ListVolumes(ctx context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	token := req.GetStartingToken()
	if err := checkPage("ListVolumes", req.GetMaxEntries(), token, isVolumeID); err != nil {
		return nil, err
	}
	if err := p.checkRoot(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	page, next := paginate(slices.Sorted(maps.Keys(p.state.Volumes)), token, int(req.GetMaxEntries()))
	resp := &csi.ListVolumesResponse{NextToken: next}
	for _, id := range page {
		v := p.state.Volumes[id]
		entry := &csi.ListVolumesResponse_Entry{Volume: p.csiVolume(v)}
		if p.cfg.EnableAttach {
			entry.Status = &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: slices.Sorted(maps.Keys(v.Attachments))}
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}

// checkPage checks a listing's max_entries and its starting_token, which must be an ID of the
// kind listed (issued tells).
func checkPage(rpc string, maxEntries int32, token string, issued func(string) bool) error {
	if maxEntries < 0 {
		return invalidArg("%s: max_entries must not be negative, got %d", rpc, maxEntries)
	}
	if token != "" && !issued(token) {
		return status.Errorf(codes.Aborted, "hostpath: %s: starting_token %q is not a token this plugin issued", rpc, token)
	}
	return nil
}

// paginate returns up to n IDs (0 = all) starting at the first ID not below token, and the
// token for the rest ("" when there is none).
func paginate(ids []string, token string, n int) (page []string, next string) {
	ids = ids[sort.SearchStrings(ids, token):]
	if n > 0 && len(ids) > n {
		return ids[:n], ids[n]
	}
	return ids, ""
}

// GetCapacity implements csi.ControllerServer: the free space of the filesystem under Root, or
// zero for a capability or topology this plugin cannot serve.
func (p *Plugin) GetCapacity(ctx context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	for _, c := range req.GetVolumeCapabilities() {
		if _, err := checkCapability(c); err != nil {
			return &csi.GetCapacityResponse{}, nil
		}
	}
	if t := req.GetAccessibleTopology(); t != nil && !p.topologyMatches(t) {
		return &csi.GetCapacityResponse{}, nil
	}
	if err := p.checkRoot(); err != nil {
		return nil, err // not the statfs's "no such file"
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p.cfg.Root, &st); err != nil {
		return nil, internal("GetCapacity: statfs %q: %v", p.cfg.Root, err)
	}
	return &csi.GetCapacityResponse{AvailableCapacity: int64(st.Bavail) * int64(st.Bsize)}, nil
}

// recordLockWait bounds the wait for the records' lock (Plugin.lock) of a create whose copy is
// made, past its request's deadline.
const recordLockWait = 30 * time.Second

// CreateSnapshot implements csi.ControllerServer: a copy of the volume's directory. The same
// name for the same source returns the existing snapshot.
func (p *Plugin) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	name, src := req.GetName(), req.GetSourceVolumeId()
	if name == "" {
		return nil, invalidArg("CreateSnapshot: name is required")
	}
	if src == "" {
		return nil, invalidArg("CreateSnapshot: snapshot %q: source_volume_id is required", name)
	}
	key := "snapshot/" + name
	held, err := p.lockToCopy(ctx, key)
	if err != nil {
		return nil, err
	}
	defer held.release()
	// By name in memory, then its record read (p.snapshot): one another process serving the root
	// deleted is gone, and made again, not answered with an ID nothing holds any more
	// (TestSnapshotDeletedByTheOtherProcessIsMadeAgain); not found so, by name among the records
	// the other process made since (learnSnapshots), under the records' lock, which the two share.
	sn := p.state.snapshotByName(name)
	if sn == nil || !p.has(sn.ID) {
		p.learnSnapshots()
		if sn = p.state.snapshotByName(name); sn != nil && !p.has(sn.ID) {
			sn = nil
		}
	}
	if sn != nil {
		if sn.SourceVolume != src {
			return nil, alreadyExists("snapshot %q exists for source volume %q, not %q", name, sn.SourceVolume, src)
		}
		return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(sn)}, nil
	}
	v, ok := p.volume(src)
	if !ok {
		return nil, notFound("snapshot %q: source volume %q not found", name, src)
	}
	sn = &snapshot{ID: newSnapshotID(), Name: name, SourceVolume: v.ID, Size: v.Capacity, CreatedAt: time.Now().UTC()}
	what := fmt.Sprintf("snapshot %q of volume %q: copying", name, v.ID)
	run, err := p.startCopy(v.ID, p.volumePath(v.ID))
	if err != nil {
		return nil, p.writeFailed(ctx, what, p.volumePath(v.ID), err)
	}
	// The copy under no lock, as a clone's (createCopy).
	finished := p.markCreating(key)
	held.release()
	hold, err := run(ctx, p.snapshotPath(sn.ID))
	if hold != nil {
		defer hold() // after the record is saved, or the copy removed
	}
	// Recorded under the lock every process serving the root shares, after looking again for the
	// name: the other process, asked for it while this one copied, found no record and copied
	// too; the one recording second answers with the first's snapshot and drops its own copy
	// (TestSnapshotMadeByBothProcessesAtOnceIsRecordedOnce). The lock is waited for past the
	// request's deadline, bounded, so that a copy made is not thrown away for a caller gone.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordLockWait)
	defer cancel()
	unlock, lerr := p.lock(lctx)
	if lerr != nil {
		p.mu.Lock()
		finished()
		p.mu.Unlock()
		_ = os.RemoveAll(p.snapshotPath(sn.ID))
		if status.Code(lerr) == codes.DeadlineExceeded {
			lerr = status.Errorf(codes.Unavailable, "hostpath: snapshot %q: its copy was made, but another process serving %s held the records' lock for %s, so it was not recorded and is removed; send the request again",
				name, p.cfg.Root, recordLockWait)
		}
		return nil, lerr
	}
	defer unlock()
	finished()
	if err == nil {
		p.learnSnapshots()
		if made := p.state.snapshotByName(name); made != nil && p.has(made.ID) {
			_ = os.RemoveAll(p.snapshotPath(sn.ID))
			if made.SourceVolume != src {
				return nil, alreadyExists("snapshot %q exists for source volume %q, not %q", name, made.SourceVolume, src)
			}
			return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(made)}, nil
		}
	}
	if err != nil {
		_ = os.RemoveAll(p.snapshotPath(sn.ID))
		return nil, p.writeFailed(ctx, what, p.volumePath(v.ID), err)
	}
	p.state.Snapshots[sn.ID] = sn
	if err := p.saveSnapshot(sn.ID); err != nil {
		delete(p.state.Snapshots, sn.ID)
		_ = os.RemoveAll(p.snapshotPath(sn.ID))
		return nil, p.writeFailed(ctx, fmt.Sprintf("snapshot %q: recording it", name), "", err)
	}
	return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(sn)}, nil
}

func csiSnapshot(sn *snapshot) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId:     sn.ID,
		SourceVolumeId: sn.SourceVolume,
		SizeBytes:      sn.Size,
		CreationTime:   timestamppb.New(sn.CreatedAt),
		ReadyToUse:     true, // the copy is complete before CreateSnapshot returns
	}
}

// DeleteSnapshot implements csi.ControllerServer. An unknown ID is already deleted.
func (p *Plugin) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, invalidArg("DeleteSnapshot: snapshot_id is required")
	}
	trash, err := p.deleteSnapshotRecorded(ctx, id)
	if err != nil {
		return nil, err
	}
	if trash == nil {
		p.removeDeleted(id) // what an earlier delete of it left in partial/, as DeleteVolume's
		return &csi.DeleteSnapshotResponse{}, nil
	}
	if err := trash.remove(); err != nil {
		return nil, internal("snapshot %q: its record is removed, and its directory (moved to %s) is not: %v%s%s; "+
			"the request sent again, or the plugin's next start, tries again, and logs what it cannot remove", id, trash.path, err, readOnlyRoot(p.cfg.Root, err), unremovable(trash.path, err))
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// deleteSnapshotRecorded is DeleteSnapshot's part under the plugin's lock, as deleteRecorded
// is DeleteVolume's: the snapshot's directory moved into partial/ (made durable) before its
// record goes, the directory returned to remove once the lock is released, nil for a snapshot
// already gone. Removed in place, a removal cut short (a stop, an I/O error, a file it cannot
// unlink) left the record beside half the directory under its final name: listed ready, and a
// restore from it answered OK with what the removal had not reached
// (TestDeleteSnapshotCutShortLeavesNoHalfSnapshotToRestore).
func (p *Plugin) deleteSnapshotRecorded(ctx context.Context, id string) (*deletedDir, error) {
	// Under lock, as a change to a volume's record: another process serving the root may have
	// made the snapshot (p.snapshot reads its record), or be copying it (copyingFrom).
	unlock, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok := p.snapshot(id); !ok {
		return nil, nil
	}
	if p.copyingFrom(id) {
		return nil, copyUnderWay("snapshot", id)
	}
	trash, err := p.moveAside("snapshot", id, p.snapshotPath(id), "")
	if err != nil {
		return nil, err
	}
	delete(p.state.Snapshots, id)
	if err := p.saveSnapshot(id); err != nil {
		if trash != nil {
			_ = trash.remove()
		}
		return nil, internal("snapshot %q: %v", id, err)
	}
	return trash, nil
}

// ListSnapshots implements csi.ControllerServer, filtered by snapshot ID or source volume and
// paginated like ListVolumes.
func (p *Plugin) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	token := req.GetStartingToken()
	if err := checkPage("ListSnapshots", req.GetMaxEntries(), token, isSnapshotID); err != nil {
		return nil, err
	}
	if err := p.checkRoot(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if want := req.GetSnapshotId(); want != "" {
		p.snapshot(want) // one another process serving the root made or deleted
	} else {
		p.learnSnapshots() // those another process serving the root made
	}
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(p.state.Snapshots)) {
		sn := p.state.Snapshots[id]
		if want := req.GetSnapshotId(); want != "" && id != want {
			continue
		}
		if !p.has(id) {
			continue // deleted by another process serving the root (p.snapshot lets it go)
		}
		if want := req.GetSourceVolumeId(); want != "" && sn.SourceVolume != want {
			continue
		}
		ids = append(ids, id)
	}
	page, next := paginate(ids, token, int(req.GetMaxEntries()))
	resp := &csi.ListSnapshotsResponse{NextToken: next}
	for _, id := range page {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: csiSnapshot(p.state.Snapshots[id])})
	}
	return resp, nil
}

// ControllerExpandVolume implements csi.ControllerServer: it records the new size and asks for
// NodeExpandVolume, so an orchestrator's node expansion path is exercised too. Shrinking is not
// supported.
func (p *Plugin) ControllerExpandVolume(ctx context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := requireVolumeID("ControllerExpandVolume", id); err != nil {
		return nil, err
	}
	if req.GetCapacityRange() == nil {
		return nil, invalidArg("ControllerExpandVolume: volume %q: capacity_range is required", id)
	}
	required, limit, err := expansionRange(req.GetCapacityRange(), req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	unlockState, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockState()
	v, err := p.lookupVolume("", id)
	if err != nil {
		return nil, err
	}
	size, err := p.grow(id, &v.Capacity, v.Capacity, required, limit, "")
	if err != nil {
		return nil, err
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: size, NodeExpansionRequired: true}, nil
}

// expansionRange checks what ControllerExpandVolume and NodeExpandVolume are asked for: the
// capacity range and, when one is given, the volume capability.
func expansionRange(cr *csi.CapacityRange, vc *csi.VolumeCapability) (required, limit int64, err error) {
	if required, limit, err = capacityRange(cr); err != nil {
		return 0, 0, err
	}
	if vc != nil {
		if _, err := checkCapability(vc); err != nil {
			return 0, 0, err
		}
	}
	return required, limit, nil
}

// grow expands volume id from current, its size as the expanding RPC sees it, to [required,
// limit] and records the new size in *size (the controller's or the node's capacity), restoring
// *size when the record cannot be saved. A directory cannot be shrunk underneath its data, so
// the size never goes below current. errPrefix begins a save error's message, as the RPC words
// its other errors.
func (p *Plugin) grow(id string, size *int64, current, required, limit int64, errPrefix string) (int64, error) {
	if limit > 0 && current > limit {
		return 0, status.Errorf(codes.OutOfRange, "hostpath: volume %q is %d bytes, above the limit %d: volumes cannot shrink", id, current, limit)
	}
	n := max(current, required)
	if n != *size {
		old := *size
		*size = n
		if err := p.saveOrUndo(errPrefix, id, func() { *size = old }); err != nil {
			return 0, err
		}
	}
	return n, nil
}
