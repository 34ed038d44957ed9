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
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/status"
)

// NodeGetCapabilities implements csi.NodeServer. GET_VOLUME_HEALTH carries the volume condition
// that CSI 1.13 moved out of NodeGetVolumeStats.
func (p *Plugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	resp := &csi.NodeGetCapabilitiesResponse{}
	for _, t := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
	} {
		resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}},
		})
	}
	return resp, nil
}

// NodeGetInfo implements csi.NodeServer.
func (p *Plugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             p.cfg.NodeID,
		MaxVolumesPerNode:  p.cfg.MaxVolumes,
		AccessibleTopology: p.topology(),
	}, nil
}

// checkPublishContext enforces, with --enable-attach, that the node RPCs carry the
// publish_context ControllerPublishVolume returned for this node. An orchestrator that drops it
// fails here loudly instead of working by accident against a plugin that ignores it.
func (p *Plugin) checkPublishContext(rpc string, v *volume, pc map[string]string) error {
	if !p.cfg.EnableAttach {
		return nil
	}
	a, attached := v.Attachments[p.cfg.NodeID]
	if !attached {
		return failedPrecondition("%s: volume %q is not controller-published to node %q (ControllerPublishVolume first)", rpc, v.ID, p.cfg.NodeID)
	}
	if len(pc) == 0 {
		return failedPrecondition("%s: volume %q: publish_context is missing; pass the one ControllerPublishVolume returned", rpc, v.ID)
	}
	if pc[PublishContextNode] != p.cfg.NodeID || pc[PublishContextAttachment] != a.Token {
		return failedPrecondition("%s: volume %q: publish_context does not match the current ControllerPublishVolume for node %q", rpc, v.ID, p.cfg.NodeID)
	}
	return nil
}

// outsideRoot refuses a staging or target path (field, as rpc's request names it) inside the
// plugin's root, as given or with its symlinks resolved: mounted there, a volume would cover
// the plugin's own records and volume directories, every volume then unknown to it and the one
// staged never unstaged (TestStagingInsideThePluginsRootIsRefused). A path that is itself a
// symlink is refused wherever it leads: mount(2) follows it, so the volume would be mounted
// where the link points, not where the orchestrator asked (meta/ through a link, another
// volume's directory, /etc), and its teardown would follow whatever the link is by then.
// Before, only the parent's links were resolved (TestStagingSymlinkIntoTheRootIsRefused,
// TestTargetSymlinkToAnotherVolumesDirectoryIsRefused).
func (p *Plugin) outsideRoot(rpc, id, field, path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		to, _ := os.Readlink(path)
		return invalidArg("%s: volume %q: %s %q is a symbolic link (to %q): the plugin mounts on the directory asked for, never through a link; "+
			"give the directory itself", rpc, id, field, path, to)
	}
	roots := []string{filepath.Clean(p.cfg.Root)}
	if r, err := filepath.EvalSymlinks(p.cfg.Root); err == nil {
		roots = append(roots, r)
	}
	paths := []string{path}
	if r, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		paths = append(paths, filepath.Join(r, filepath.Base(path)))
	}
	for _, root := range roots {
		for _, q := range paths {
			if within(q, root) {
				return invalidArg("%s: volume %q: %s %q is inside the plugin's root %q, which holds its volumes and records: mount it elsewhere", rpc, id, field, path, p.cfg.Root)
			}
			// Above the root, a mount covers it as one inside does: the root's path then shows
			// the volume's data, which its user may write, records and links the plugin would
			// take for its own (TestStagingOverAnAncestorOfTheRootIsRefused).
			if within(root, q) {
				return invalidArg("%s: volume %q: %s %q holds the plugin's root %q, which holds its volumes and records: mounted there, the volume would cover them; mount it elsewhere",
					rpc, id, field, path, p.cfg.Root)
			}
		}
	}
	// The same by the directories' identities (device and inode), which a bind mount shares
	// with its source: through the source of a bind mount the root's path is reached by, the
	// root's meta/ passed the checks above, and the volume's mount, propagated to the root's
	// path (shared mounts, systemd's default), covered its records
	// (TestStagingInsideTheRootThroughItsBindSourceIsRefused).
	if root, ok := dirID(p.cfg.Root); ok {
		if slices.Contains(dirChain(path), root) {
			return invalidArg("%s: volume %q: %s %q is inside the plugin's root %q (the same directory, reached through another path: a bind mount), which holds its volumes and records: mount it elsewhere",
				rpc, id, field, path, p.cfg.Root)
		}
		if at, ok := dirID(path); ok && slices.Contains(dirChain(p.cfg.Root), at) {
			return invalidArg("%s: volume %q: %s %q holds the plugin's root %q (the same directory as one above it, reached through another path: a bind mount): mounted there, the volume would cover them; mount it elsewhere",
				rpc, id, field, path, p.cfg.Root)
		}
	}
	// And through a bind of a directory below the root (another volume's staging or target, a
	// bind of root/volumes/A): the chain above the path never meets the root's own identity,
	// and a volume published inside another's staging was mounted in that volume's data, and,
	// propagated, below the root (TestTargetInsideAnotherVolumesStagingIsRefused).
	if in, err := throughABindOfTheRoot(p.cfg.Root, path); err == nil && in {
		return invalidArg("%s: volume %q: %s %q is inside the plugin's root %q, reached through a bind mount of a directory in it (another volume's staging or target): mount it elsewhere",
			rpc, id, field, path, p.cfg.Root)
	}
	return nil
}

// dirIdentity is a directory's device and inode, which a bind mount shares with its source.
type dirIdentity struct{ dev, ino uint64 }

// dirID is path's identity, its symlinks followed; false when it cannot be had.
func dirID(path string) (dirIdentity, bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return dirIdentity{}, false
	}
	return dirIdentity{st.Dev, st.Ino}, true
}

// dirChain is the identities of path and of each directory above it, to /, those that exist.
func dirChain(path string) []dirIdentity {
	var ids []dirIdentity
	for q := path; ; q = filepath.Dir(q) {
		if id, ok := dirID(q); ok {
			ids = append(ids, id)
		}
		if q == filepath.Dir(q) {
			return ids
		}
	}
}

// within says whether path is dir or below it; both are clean and absolute.
func within(path, dir string) bool {
	return path == dir || dir == string(filepath.Separator) || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// NodeStageVolume implements csi.NodeServer: it bind-mounts the volume's directory on the
// staging path, creating that directory if needed (its parent must exist).
func (p *Plugin) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id := req.GetVolumeId()
	path, err := nodeArgs("NodeStageVolume", id, "staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	if err := p.outsideRoot("NodeStageVolume", id, "staging_target_path", path); err != nil {
		return nil, err
	}
	if req.GetVolumeCapability() == nil {
		return nil, invalidArg("NodeStageVolume: volume %q: volume_capability is required", id)
	}
	c, err := checkCapability(req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}

	unlockState, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockState()
	v, err := p.lookupVolume("NodeStageVolume: ", id)
	if err != nil {
		return nil, err
	}
	if err := p.checkPublishContext("NodeStageVolume", v, req.GetPublishContext()); err != nil {
		return nil, err
	}
	mounted, err := p.isMountPoint("NodeStageVolume", id, path)
	if err != nil {
		return nil, err
	}
	if st := v.Staging; st != nil {
		switch {
		case st.Path == path && mounted:
			if st.Capability != c.key {
				return nil, alreadyExists("NodeStageVolume: volume %q is staged at %q with a different volume capability", id, path)
			}
			if err := p.showsTheVolume("NodeStageVolume", id, "staging path", path); err != nil {
				return nil, err
			}
			if err := p.applyFlags("NodeStageVolume", id, path, c.flags); err != nil {
				return nil, err
			}
			return &csi.NodeStageVolumeResponse{}, nil
		case st.Path != path:
			if old, _ := p.mounter.IsMountPoint(st.Path); old {
				return nil, failedPrecondition("NodeStageVolume: volume %q is already staged at %q (one staging path per volume)", id, st.Path)
			}
		}
	}
	if err := p.refuseRecordedByAnother("NodeStageVolume", id, "staging path", path); err != nil {
		return nil, err
	}
	if mounted {
		return nil, failedPrecondition("NodeStageVolume: volume %q: staging path %q is already a mount point of something else", id, path)
	}
	created, err := ensureDir("staging_target_path", path)
	if err != nil {
		return nil, err
	}
	if err := refuseMountsBelow("NodeStageVolume", id, "staging path", path, created); err != nil {
		return nil, err
	}
	prev := v.Staging
	v.Staging = &staging{Path: path, Capability: c.key}
	if err := p.recordThenMount("NodeStageVolume", id, p.volumePath(id), path, c.flags, created, func() { v.Staging = prev }); err != nil {
		return nil, err
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume implements csi.NodeServer: it unmounts the staging path and leaves the
// directory, which belongs to the orchestrator. Unstaging what is not staged succeeds.
func (p *Plugin) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id := req.GetVolumeId()
	path, err := nodeArgs("NodeUnstageVolume", id, "staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	unlockState, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockState()
	v, err := p.lookupVolume("NodeUnstageVolume: ", id)
	if err != nil {
		return nil, err
	}
	mounted, err := p.isMountPoint("NodeUnstageVolume", id, path)
	if err != nil {
		return nil, err
	}
	ours := v.Staging != nil && v.Staging.Path == path
	if mounted && !ours {
		return nil, failedPrecondition("NodeUnstageVolume: volume %q is not staged at %q; refusing to unmount what is mounted there", id, path)
	}
	if mounted {
		if err := p.mountedOver("NodeUnstageVolume", id, "staging path", path); err != nil {
			return nil, err
		}
	}
	// The targets are published from the volume's own staging path: they hold that one only.
	// Another path, not mounted (a second orchestrator's, refused the staging), is not staged:
	// OK, as CSI has it, and the other claim's mounts are not touched.
	for _, target := range slices.Sorted(maps.Keys(v.Targets)) {
		if m, _ := p.mounter.IsMountPoint(target); m && ours {
			return nil, failedPrecondition("NodeUnstageVolume: volume %q is still published at %q (NodeUnpublishVolume first)", id, target)
		}
	}
	if mounted {
		if err := p.mounter.Unmount(path); err != nil {
			return nil, p.mountStatus("NodeUnstageVolume", err)
		}
	}
	if ours {
		prev := v.Staging
		v.Staging = nil
		if err := p.saveTeardownOrUndo("NodeUnstageVolume: ", id, func() { v.Staging = prev }); err != nil {
			return nil, err
		}
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume implements csi.NodeServer: it bind-mounts the staging path on the target,
// with the request's own mount flags, read-only when asked, creating the target directory (its parent must exist). Publishing the
// same target again with the same options succeeds; with different ones it is ALREADY_EXISTS.
func (p *Plugin) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id := req.GetVolumeId()
	target, err := nodeArgs("NodePublishVolume", id, "target_path", req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	if err := p.outsideRoot("NodePublishVolume", id, "target_path", target); err != nil {
		return nil, err
	}
	if req.GetVolumeCapability() == nil {
		return nil, invalidArg("NodePublishVolume: volume %q: volume_capability is required", id)
	}
	c, err := checkCapability(req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	stagingPath, err := checkPath("staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, invalidArg("NodePublishVolume: volume %q: %v (the plugin has STAGE_UNSTAGE_VOLUME)", id, err)
	}
	flags := c.flags
	if req.GetReadonly() {
		flags |= unix.MS_RDONLY
	}

	unlockState, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockState()
	v, err := p.lookupVolume("NodePublishVolume: ", id)
	if err != nil {
		return nil, err
	}
	if err := p.checkPublishContext("NodePublishVolume", v, req.GetPublishContext()); err != nil {
		return nil, err
	}
	if v.Staging == nil || v.Staging.Path != stagingPath {
		return nil, failedPrecondition("NodePublishVolume: volume %q is not staged at %q (NodeStageVolume first)", id, stagingPath)
	}
	if staged, _ := p.mounter.IsMountPoint(stagingPath); !staged {
		return nil, failedPrecondition("NodePublishVolume: volume %q: staging path %q is no longer mounted (NodeStageVolume again)", id, stagingPath)
	}
	// The target is a bind of the volume's directory, which must be the one the staging shows:
	// the root moved to another disk (the plugin started again with --root there), or the
	// directory made again or restored from a backup, it is another, and a claim joining the
	// staging would write another tree than the claims published before
	// (TestPublishAfterTheVolumesDirectoryChangedShowsWhatTheStagingShows).
	if same, err := p.mounter.Shows(stagingPath, p.volumePath(id)); err == nil && !same {
		// Something mounted over the staging since (an admin's tmpfs) is what a bind of it
		// would show: said so, with the unmount that the unstage needs too
		// (TestPublishWithSomethingMountedOverTheStagingIsNotCalledAMovedDirectory).
		if err := p.mountedOver("NodePublishVolume", id, "staging path", stagingPath); err != nil {
			return nil, err
		}
		// Not "stage it again": a stage at a path still staged answers OK and binds nothing
		// (TestPublishRefusedForAChangedDirectoryAdvisesAStepThatWorks).
		return nil, failedPrecondition("NodePublishVolume: volume %q: its staging %q shows another directory than the volume's %s now (the root moved, or the directory was made again, since it was staged): "+
			"unpublish its claims and unstage it (NodeUnstageVolume), then stage and publish it again", id, stagingPath, p.volumePath(id))
	}
	mounted, err := p.isMountPoint("NodePublishVolume", id, target)
	if err != nil {
		return nil, err
	}
	if mounted {
		pub, ours := v.Targets[target]
		if !ours {
			if other := p.state.targetOwner(target); other != nil {
				return nil, failedPrecondition("NodePublishVolume: volume %q: target %q is where volume %q is published", id, target, other.ID)
			}
			return nil, failedPrecondition("NodePublishVolume: volume %q: target %q is already a mount point of something else", id, target)
		}
		if pub.Readonly != req.GetReadonly() || pub.Capability != c.key {
			return nil, alreadyExists("NodePublishVolume: volume %q is published at %q with different options (readonly=%t)", id, target, pub.Readonly)
		}
		if err := p.showsTheVolume("NodePublishVolume", id, "target", target); err != nil {
			return nil, err
		}
		if err := p.applyFlags("NodePublishVolume", id, target, flags); err != nil {
			return nil, err
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := p.refuseRecordedByAnother("NodePublishVolume", id, "target", target); err != nil {
		return nil, err
	}
	created, err := ensureDir("target_path", target)
	if err != nil {
		return nil, err
	}
	if err := refuseMountsBelow("NodePublishVolume", id, "target", target, created); err != nil {
		return nil, err
	}
	prev, had := v.Targets[target]
	if v.Targets == nil {
		v.Targets = map[string]publication{}
	}
	v.Targets[target] = publication{Readonly: req.GetReadonly(), Capability: c.key}
	undo := func() {
		if had {
			v.Targets[target] = prev
		} else {
			delete(v.Targets, target)
		}
	}
	// A bind of the staging, every claim's target showing what it shows (and joined with it
	// where the state dir's mounts are shared), with the request's own flags: the remount keeps
	// those of the root's mount, not the staging's, which were the claim's that staged it
	// (BindMount's carry; TestPublishDoesNotInheritTheStagingClaimsMountFlags).
	if err := p.recordThenMount("NodePublishVolume", id, stagingPath, target, flags, created, undo); err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume implements csi.NodeServer: it unmounts the target and removes the target
// directory, as the CSI spec asks of the plugin that created it. Unpublishing what is not
// published succeeds.
func (p *Plugin) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id := req.GetVolumeId()
	target, err := nodeArgs("NodeUnpublishVolume", id, "target_path", req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	unlockState, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockState()
	v, err := p.lookupVolume("NodeUnpublishVolume: ", id)
	if err != nil {
		return nil, err
	}
	mounted, err := p.isMountPoint("NodeUnpublishVolume", id, target)
	if err != nil {
		return nil, err
	}
	_, ours := v.Targets[target]
	if mounted && !ours {
		if other := p.state.targetOwner(target); other != nil {
			return nil, failedPrecondition("NodeUnpublishVolume: target %q holds volume %q, not %q", target, other.ID, id)
		}
		return nil, failedPrecondition("NodeUnpublishVolume: volume %q is not published at %q; refusing to unmount what is mounted there", id, target)
	}
	if mounted {
		if err := p.mountedOver("NodeUnpublishVolume", id, "target", target); err != nil {
			return nil, err
		}
		if err := p.mounter.Unmount(target); err != nil {
			return nil, p.mountStatus("NodeUnpublishVolume", err)
		}
	}
	// The plugin makes directories at targets (ensureDir), and CSI has it delete what it made:
	// anything else there (a caller's file, where the volume was never published) is left.
	// Before, a regular file was removed and OK answered (TestUnpublishOfAPathNotPublishedLeavesAFileThere).
	// So is a directory at a target the volume does not record: one the plugin made is recorded
	// before its mount, and forgotten only after it is removed. Before, any empty directory the
	// request named was removed, another volume's under the root among them, which its next
	// stage could then not bind (TestUnpublishDoesNotRemoveAnotherVolumesDirectory).
	// A directory with something in it once unmounted is left, with what it holds: the
	// caller's directory the plugin took as it was (ensureDir), or files written into the bare
	// target while it was not mounted (after a reboot). Before, its removal failed, INTERNAL,
	// the target stayed recorded, and every retry failed the same: the volume could never be
	// unpublished (TestUnpublishOfATargetThatWasNotEmptyCompletes).
	if fi, err := os.Lstat(target); ours && (err != nil || fi.IsDir()) {
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
			return nil, internal("NodeUnpublishVolume: volume %q: removing target: %v", id, err)
		}
	}
	if ours {
		prev := v.Targets[target]
		delete(v.Targets, target)
		if err := p.saveTeardownOrUndo("NodeUnpublishVolume: ", id, func() { v.Targets[target] = prev }); err != nil {
			return nil, err
		}
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// mountedOver refuses a teardown of volume id's mount at path (its staging path or target,
// what) when the topmost mount there is not the one the plugin made (Mounter.Holds): something
// was mounted over it since (an admin's tmpfs, a disk, another directory). Unmounting the topmost mount took that one away, a
// tmpfs's data with it, and left the volume's below, or forgot the staging
// (TestTeardownRefusesToUnmountWhatWasMountedOverTheVolume).
func (p *Plugin) mountedOver(rpc, id, what, path string) error {
	ok, err := p.mounter.Holds(path, p.volumePath(id))
	if err != nil {
		return internal("%s: volume %q: %s %q: %v", rpc, id, what, path, err)
	}
	if ok {
		return nil
	}
	return failedPrecondition("%s: volume %q: %s %q has %s mounted over the volume; refusing to unmount what is not the volume's: "+
		"if nothing needs it, unmount it by hand (`umount %s`), then send the request again", rpc, id, what, path, topMount(path), path)
}

// showsTheVolume refuses to answer a stage or publish again OK at path, where volume id's
// record says it is (what: its staging path or target), when what is mounted there is not the
// volume's (Mounter.Holds): its mount went (a reboot, an unmount) and another's took the path.
// Answered OK, the orchestrator was told volume id was there while the path showed the other
// volume's data (TestPublishAgainAtATargetNowShowingAnotherVolumeIsNotOK,
// TestStageAgainAtAPathNowShowingAnotherVolumeIsNotOK).
func (p *Plugin) showsTheVolume(rpc, id, what, path string) error {
	ok, err := p.mounter.Holds(path, p.volumePath(id))
	if err != nil {
		return internal("%s: volume %q: %s %q: %v", rpc, id, what, path, err)
	}
	if ok {
		return nil
	}
	return failedPrecondition("%s: volume %q: %s %q shows %s, not the volume, though the volume is recorded there: "+
		"if nothing needs what is mounted there, unmount it (`umount %s`), then send the request again", rpc, id, what, path, topMount(path), path)
}

// refuseRecordedByAnother refuses volume id a staging path or target (what) that another
// volume's record names, or one with another volume's recorded staging path or target below
// it, whether or not that one is mounted now (its mount gone by a reboot or an unmount, its
// record kept for the orchestrator's unpublish or restore). Taken, two records named one path,
// and each volume's restore or teardown was refused, advising the unmount of the other's
// (TestPublishAtATargetAnotherVolumeRecordsIsRefused, TestStageAtAPathAnotherVolumeRecordsIsRefused);
// or the other's unpublish, below, led into this volume's data and removed a directory of it
// (TestMountBelowRefusalNamesTheVolumeAndAdvisesNoHarm). The records are in memory: no read.
func (p *Plugin) refuseRecordedByAnother(rpc, id, what, path string) error {
	for _, v := range p.state.Volumes {
		if v.ID == id {
			continue
		}
		var recorded []string
		if v.Staging != nil {
			recorded = append(recorded, v.Staging.Path)
		}
		for t := range v.Targets {
			recorded = append(recorded, t)
		}
		for _, r := range recorded {
			switch {
			case r == path:
				return failedPrecondition("%s: volume %q: %s %q is where volume %q is recorded staged or published: "+
					"unpublish or unstage volume %q there first (NodeUnpublishVolume, NodeUnstageVolume)", rpc, id, what, path, v.ID, v.ID)
			case within(r, path):
				return failedPrecondition("%s: volume %q: %s %q has volume %q recorded staged or published below it, at %q, which this volume's mount would cover: "+
					"unpublish or unstage volume %q there first", rpc, id, what, path, v.ID, r, v.ID)
			}
		}
	}
	return nil
}

// refuseMountsBelow refuses a staging path or target (what) that an existing directory path
// has a mount below: the volume's bind over it would hide that mount, and the unpublish of
// its own path, resolving into this volume then, answered OK and forgot it, still mounted
// (TestUnpublishOfATargetCoveredByAnotherVolumeDoesNotLeaveItsMount). A directory the call
// made, or an empty one, has none: the mount table is read only for one that holds entries.
func refuseMountsBelow(rpc, id, what, path string, created bool) error {
	if created {
		return nil
	}
	if d, err := os.Open(path); err == nil {
		_, rerr := d.Readdirnames(1)
		d.Close()
		if rerr != nil { // empty (io.EOF), or unreadable: a mount point below would be an entry
			return nil
		}
	}
	real := path // the mount table names mount points by their real paths
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(real))
	if err != nil {
		return internal("%s: volume %q: %s %q: reading the mount table: %v", rpc, id, what, path, err)
	}
	for _, m := range mounts {
		if m.Mountpoint != real {
			return failedPrecondition("%s: volume %q: %s %q has %q mounted below it, which the volume's mount over it would hide: unmount that first",
				rpc, id, what, path, m.Mountpoint)
		}
	}
	return nil
}

// applyFlags gives the bind at dst, recorded and found mounted by an RPC sent again, the flags
// its bind is to have (FlagsApplier): the process that made it may have ended before its
// remount, leaving it read-write for a read-only claim.
func (p *Plugin) applyFlags(rpc, id, dst string, flags uintptr) error {
	a, ok := p.mounter.(FlagsApplier)
	if !ok {
		return nil
	}
	if err := a.ApplyFlags(dst, p.volumePath(id), flags); err != nil {
		return p.mountStatus(rpc, fmt.Errorf("volume %q: %w", id, err))
	}
	return nil
}

// recordThenMount saves volume id's changed record, then bind-mounts src on dst. Record first,
// mount second: a crash in between leaves a record without a mount, which the retried RPC
// completes, rather than a mount nobody knows about. When either step fails, undo puts the
// record back (saved again after a failed mount) and dst goes if the RPC created it.
func (p *Plugin) recordThenMount(rpc, id, src, dst string, flags uintptr, created bool, undo func()) error {
	if err := p.saveOrUndo(rpc+": ", id, undo); err != nil {
		removeCreated(created, dst)
		return err
	}
	if err := p.mounter.BindMount(src, dst, p.volumePath(id), flags); err != nil {
		undo()
		_ = p.saveVolume(id)
		removeCreated(created, dst)
		return p.mountStatus(rpc, err)
	}
	return nil
}

// ensureDir creates a staging or target directory whose parent exists, and reports whether it
// did, so a failed mount can take it away again.
func ensureDir(field, path string) (created bool, err error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return false, nil
	case err == nil:
		return false, failedPrecondition("%s %q exists and is not a directory", field, path)
	case !errors.Is(err, fs.ErrNotExist):
		return false, internal("%s %q: %v", field, path, err)
	}
	if err := os.Mkdir(path, 0o750); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// The orchestrator makes the parent. Under Nomad it is below the plugin job's
			// stage_publish_base_dir, which must be below the clients' data_dir
			// (TestStagingPathWithoutItsParentSaysWhoMakesIt).
			return false, failedPrecondition("%s %q: its parent directory does not exist; the orchestrator makes it "+
				"(run by Nomad, the plugin job's stage_publish_base_dir must be below the clients' data_dir: "+
				"volctl export nomad --nomad-data-dir DIR writes it so)", field, path)
		}
		return false, internal("%s %q: %v", field, path, err)
	}
	return true, nil
}

func removeCreated(created bool, path string) {
	if created {
		_ = os.Remove(path)
	}
}

// pathOf reports whether path is where volume v is staged or published, mounted there, and
// showing the volume (Mounter.Holds, as showsTheVolume judges a stage or publish sent again);
// when not, why says what is there instead. A mount point alone was taken for the volume's:
// with the bind at a target unmounted by hand and a tmpfs mounted in its place,
// NodeGetVolumeStats answered with the volume's usage and NodeGetVolumeHealth called it
// healthy there, and NodeExpandVolume expanded it there
// (TestNodeGetVolumeStatsAtATargetNowShowingSomethingElseIsNotFound).
func (p *Plugin) pathOf(v *volume, path string) (at bool, why string) {
	if path == "" {
		return false, "not a clean absolute path"
	}
	_, published := v.Targets[path]
	staged := v.Staging != nil && v.Staging.Path == path
	if !published && !staged {
		return false, "not a staging path or target its record names"
	}
	if mounted, _ := p.mounter.IsMountPoint(path); !mounted {
		return false, "nothing is mounted there"
	}
	holds, err := p.mounter.Holds(path, p.volumePath(v.ID))
	if err != nil {
		return false, fmt.Sprintf("what is mounted there cannot be told: %v", err)
	}
	if !holds {
		return false, fmt.Sprintf("it shows %s, not the volume", topMount(path))
	}
	return true, ""
}

// NodeGetVolumeStats implements csi.NodeServer: bytes and inodes used by the volume's directory
// (a du-like walk), against the recorded capacity and the free space of the filesystem.
func (p *Plugin) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	id, path := req.GetVolumeId(), req.GetVolumePath()
	if err := requireVolumeID("NodeGetVolumeStats", id); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, invalidArg("NodeGetVolumeStats: volume %q: volume_path is required", id)
	}
	if err := p.checkRoot(); err != nil {
		return nil, err // not "not found": the records are where the root went
	}
	p.mu.Lock()
	v, ok := p.volume(id)
	var capacity int64
	var at bool
	var why string
	if ok {
		capacity = max(v.Capacity, v.NodeCapacity)
		at, why = p.pathOf(v, cleanIfAbs(path))
	}
	p.mu.Unlock()
	if !ok {
		return nil, notFound("NodeGetVolumeStats: volume %q not found", id)
	}
	if !at {
		return nil, notFound("NodeGetVolumeStats: volume %q is not staged or published at %q: %s", id, path, why)
	}

	// The walk runs without the lock: it only reads, and a big volume must not stall other RPCs.
	u, err := diskUsage(ctx, p.volumePath(id))
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, internal("NodeGetVolumeStats: volume %q: %v", id, err)
	}
	p.mountsLeftOut("its stats", p.volumePath(id), u.mounts)
	var st unix.Statfs_t
	if err := unix.Statfs(p.volumePath(id), &st); err != nil {
		return nil, internal("NodeGetVolumeStats: volume %q: statfs: %v", id, err)
	}
	bsize := int64(st.Bsize)
	fsTotal, fsFree := int64(st.Blocks)*bsize, int64(st.Bavail)*bsize
	total := capacity
	if total == 0 {
		total = fsTotal
	}
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{
			Unit:      csi.VolumeUsage_BYTES,
			Total:     total,
			Used:      u.bytes,
			Available: max(0, min(total-u.bytes, fsFree)),
		},
		{
			Unit:      csi.VolumeUsage_INODES,
			Total:     int64(st.Files),
			Used:      u.inodes,
			Available: int64(st.Ffree),
		},
	}}, nil
}

func cleanIfAbs(path string) string {
	if clean, err := checkPath("volume_path", path); err == nil {
		return clean
	}
	return ""
}

// NodeGetVolumeHealth implements csi.NodeServer: the volume condition. A missing volume directory
// or a path that is no longer mounted, or shows something else than the volume (pathOf), makes
// the volume INACCESSIBLE.
func (p *Plugin) NodeGetVolumeHealth(ctx context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	id := req.GetVolumeId()
	if err := requireVolumeID("NodeGetVolumeHealth", id); err != nil {
		return nil, err
	}
	// As every other read: with the root moved, NOT_FOUND of a volume that exists, and its
	// lookup forgot it (TestHealthOfAVolumeWhileTheRootIsMovedDoesNotForgetIt).
	if err := p.checkRoot(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	v, err := p.lookupVolume("NodeGetVolumeHealth: ", id)
	if err != nil {
		return nil, err
	}
	health := &csi.VolumeHealth{VolumeId: id}
	inaccessible := func(reason, msg string) {
		health.HealthStatuses = append(health.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: reason, Message: msg,
		})
	}
	if fi, err := os.Stat(p.volumePath(id)); err != nil || !fi.IsDir() {
		inaccessible("VolumeDirectoryMissing", "the volume's directory under the plugin root is gone")
	}
	if path := req.GetStagingTargetPath(); path != "" {
		if at, why := p.pathOf(v, cleanIfAbs(path)); !at {
			inaccessible("NotStaged", "the volume is not mounted at the staging path: "+why)
		}
	}
	if path := req.GetVolumePublishPath(); path != "" {
		if at, why := p.pathOf(v, cleanIfAbs(path)); !at {
			inaccessible("NotPublished", "the volume is not mounted at the publish path: "+why)
		}
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: health}, nil
}

// NodeExpandVolume implements csi.NodeServer: it records the node-side size, which for a
// directory needs no resizing, and returns it.
func (p *Plugin) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	id, path := req.GetVolumeId(), req.GetVolumePath()
	if err := requireVolumeID("NodeExpandVolume", id); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, invalidArg("NodeExpandVolume: volume %q: volume_path is required", id)
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
	v, err := p.lookupVolume("NodeExpandVolume: ", id)
	if err != nil {
		return nil, err
	}
	if at, why := p.pathOf(v, cleanIfAbs(path)); !at {
		return nil, notFound("NodeExpandVolume: volume %q is not staged or published at %q: %s", id, path, why)
	}
	size, err := p.grow(id, &v.NodeCapacity, max(v.Capacity, v.NodeCapacity), required, limit, "NodeExpandVolume: ")
	if err != nil {
		return nil, err
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}
