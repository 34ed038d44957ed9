package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// release drives a claim along the release path (DESIGN.md, "Release path"): unpublishing ->
// NodeUnpublishVolume -> node-detached -> NodeUnstageVolume when no other claim uses the staging
// -> ControllerUnpublishVolume when no other live claim holds the volume -> controller-detached
// -> freed into the history with outcome. NOT_FOUND on a teardown RPC counts as done. Each
// state is committed before the next RPC. The caller holds the volume lock.
func (e *Engine) release(ctx context.Context, c *conn, v store.Volume, cl *store.Claim, outcome store.Outcome) error {
	if !cl.Releasing {
		cl.Releasing = true
		if err := e.save(ctx, cl, nil); err != nil {
			return err
		}
	}
	for {
		var err error
		switch cl.State {
		case store.ClaimTaken, store.ClaimControllerPublished:
			// NodePublishVolume was never sent for this claim: nothing to unpublish. A staging or
			// controller publication it may have started is undone below, if nothing else uses it.
			cl.State = store.ClaimNodeDetached
			err = e.save(ctx, cl, nil)
		case store.ClaimNodeStaged, store.ClaimPublished:
			cl.State = store.ClaimUnpublishing
			err = e.save(ctx, cl, nil)
		case store.ClaimUnpublishing:
			err = e.nodeUnpublish(ctx, c, v, cl)
		case store.ClaimNodeDetached:
			err = e.detachVolume(ctx, c, v, cl)
		case store.ClaimControllerDetached:
			return e.free(ctx, cl, outcome, "")
		}
		if err != nil {
			// A release cannot be rolled back: whatever the class, it is left for reconcile.
			e.markForReconcile(ctx, cl, lastRPC(err), err)
			return fmt.Errorf("release: %w (the claim is left %s for `volctl reconcile`; `volctl volume detach --force` drops it if the plugin is gone)", err, cl.State)
		}
		failpoint("release:" + string(cl.State))
	}
}

func (e *Engine) nodeUnpublish(ctx context.Context, c *conn, v store.Volume, cl *store.Claim) error {
	if err := e.unbind(cl); err != nil {
		return err
	}
	err := e.retry(ctx, csi.RPCNodeUnpublishVolume, func(ctx context.Context) error {
		return c.client.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: v.ExternalID, TargetPath: cl.TargetPath})
	})
	if err != nil && !csi.IsIgnorable(err) {
		return err
	}
	failpoint("rpc:NodeUnpublishVolume")
	removeEmptyDirs(cl.TargetPath, filepath.Join(e.cfg.StateDir, publishDir))
	cl.State = store.ClaimNodeDetached
	return e.save(ctx, cl, nil)
}

// detachVolume undoes what no other claim needs any more, then moves the claim to
// controller-detached.
func (e *Engine) detachVolume(ctx context.Context, c *conn, v store.Volume, cl *store.Claim) error {
	if err := e.undoUnused(ctx, c, v); err != nil {
		return err
	}
	cl.State = store.ClaimControllerDetached
	return e.save(ctx, cl, nil)
}

// undoUnused unstages a volume when no live claim uses its staging, and controller-unpublishes
// it when no live claim holds it. Claims on their way out (node-detached and later) count for
// neither: the one being released is one of them.
func (e *Engine) undoUnused(ctx context.Context, c *conn, v store.Volume) error {
	st, hasStaging, err := e.getStaging(ctx, v.ID)
	if err != nil || !hasStaging {
		return err
	}
	var stagingUsers, holders int
	err = e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		stagingUsers, err = tx.Claims().CountByVolume(v.ID, store.ClaimNodeStaged, store.ClaimPublished, store.ClaimUnpublishing)
		if err != nil {
			return err
		}
		holders, err = tx.Claims().CountByVolume(v.ID, store.ClaimTaken, store.ClaimControllerPublished,
			store.ClaimNodeStaged, store.ClaimPublished, store.ClaimUnpublishing)
		return err
	})
	if err != nil {
		return err
	}
	if st.StagingPath != "" && stagingUsers == 0 {
		if c.stages() {
			err := e.retry(ctx, csi.RPCNodeUnstageVolume, func(ctx context.Context) error {
				return c.client.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: v.ExternalID, StagingPath: st.StagingPath})
			})
			if err != nil && !csi.IsIgnorable(err) {
				return err
			}
			failpoint("rpc:NodeUnstageVolume")
		}
		removeEmptyDirs(st.StagingPath, filepath.Join(e.cfg.StateDir, stagingDir))
		st.StagingPath, st.Staged = "", false
		if err := e.putOrDropStaging(ctx, st); err != nil {
			return err
		}
	}
	if holders == 0 && st.ControllerPublished {
		if c.controllerPublishes() {
			nodeID := st.NodeID
			if nodeID == "" {
				nodeID = c.fp.NodeID
			}
			err := e.withController(ctx, c, func(ctx context.Context) error {
				return e.retry(ctx, csi.RPCControllerUnpublishVolume, func(ctx context.Context) error {
					return c.client.ControllerUnpublishVolume(ctx, csi.ControllerUnpublishVolumeRequest{
						VolumeID: v.ExternalID, NodeID: nodeID, Secrets: v.Secrets})
				})
			})
			if err != nil && !csi.IsIgnorable(err) {
				return err
			}
			failpoint("rpc:ControllerUnpublishVolume")
		}
		st.ControllerPublished, st.PublishContext = false, nil
		if err := e.putOrDropStaging(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// putOrDropStaging writes a staging row back, or deletes it once nothing is left in it.
func (e *Engine) putOrDropStaging(ctx context.Context, st store.Staging) error {
	return e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		if st.StagingPath == "" && !st.Staged && !st.ControllerPublished {
			err := tx.Stagings().Delete(st.VolumeID)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		}
		return tx.Stagings().Put(&st)
	})
}

// free moves a released claim into the history.
func (e *Engine) free(ctx context.Context, cl *store.Claim, outcome store.Outcome, note string) error {
	msg := fmt.Sprintf("%s claim freed (%s)", cl.Mode, outcome)
	if note != "" {
		msg += ": " + note
	}
	return e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		if err := tx.Claims().Free(cl.ID, outcome); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "release", VolumeID: cl.VolumeID, Alloc: cl.Alloc, Message: msg})
	})
}

// removeEmptyDirs removes path and then its parents while they are empty, stopping at root.
// A directory that is still a mount point is not empty to rmdir (EBUSY), so a live mount is
// never removed from under its user.
func removeEmptyDirs(path, root string) {
	for p := path; p != root && len(p) > len(root); p = filepath.Dir(p) {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return
		}
	}
}

// ReleaseResult says what a release did.
type ReleaseResult struct {
	Released bool      `json:"released"` // false: the alloc held no claim (a no-op)
	Claim    ClaimInfo `json:"claim"`
}

// Release frees an alloc's claim on a volume through the release path. Releasing a claim that
// does not exist is a no-op (Released is false).
func (e *Engine) Release(ctx context.Context, volumeID, alloc string) (ReleaseResult, error) {
	fail := func(err error) (ReleaseResult, error) {
		return ReleaseResult{}, fmt.Errorf("release %q for alloc %q: %w", volumeID, alloc, err)
	}
	if err := e.checkVolumeExists(ctx, volumeID); err != nil {
		return fail(err)
	}
	unlock, err := e.locks.volume(ctx, volumeID)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	var cl store.Claim
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		var err error
		if cl, err = tx.Claims().Find(volumeID, alloc); err != nil {
			return err
		}
		cl.Releasing = true
		return tx.Claims().Update(&cl)
	})
	if errors.Is(err, store.ErrNotFound) {
		return ReleaseResult{}, nil
	}
	if err != nil {
		return fail(err)
	}
	if _, err := e.drive(ctx, cl.ID, store.OutcomeReleased); err != nil {
		return fail(err)
	}
	return ReleaseResult{Released: true, Claim: claimInfo(cl)}, nil
}

func (e *Engine) checkVolumeExists(ctx context.Context, id string) error {
	return e.store.View(ctx, func(tx *store.Tx) error {
		_, err := tx.Volumes().Get(id)
		if errors.Is(err, store.ErrNotFound) {
			return notFoundf("volume %q not found", id)
		}
		return err
	})
}
