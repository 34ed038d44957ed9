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

// publish drives a claim along the publish path (DESIGN.md, "Publish path"): taken ->
// ControllerPublishVolume -> controller-published -> NodeStageVolume -> node-staged ->
// NodePublishVolume -> published, each RPC only when the plugin's capabilities call for it and
// each state committed before the next RPC is sent. The caller holds the volume lock.
func (e *Engine) publish(ctx context.Context, c *conn, v store.Volume, cl *store.Claim) error {
	for {
		var err error
		switch cl.State {
		case store.ClaimTaken:
			err = e.controllerPublish(ctx, c, v, cl)
		case store.ClaimControllerPublished:
			err = e.nodeStage(ctx, c, v, cl)
		case store.ClaimNodeStaged:
			err = e.nodePublish(ctx, c, v, cl)
		case store.ClaimPublished:
			return e.bind(cl)
		default:
			return fmt.Errorf("claim is on the release path (%s)", cl.State)
		}
		if err != nil {
			return err
		}
		failpoint("claim:" + string(cl.State))
	}
}

// getStaging returns the volume's staging row, if there is one.
func (e *Engine) getStaging(ctx context.Context, volumeID string) (store.Staging, bool, error) {
	var st store.Staging
	err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		st, err = tx.Stagings().Get(volumeID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.Staging{VolumeID: volumeID}, false, nil
	}
	return st, err == nil, err
}

func (e *Engine) controllerPublish(ctx context.Context, c *conn, v store.Volume, cl *store.Claim) error {
	if !c.controllerPublishes() {
		cl.State = store.ClaimControllerPublished
		return e.save(ctx, cl, nil)
	}
	// Read-only attachment follows the volume's access mode, not the claim's, so every claim of
	// the volume asks for the same attachment and the RPC stays idempotent; a read claim is
	// made read-only by NodePublishVolume.
	req := csi.ControllerPublishVolumeRequest{
		VolumeID: v.ExternalID, NodeID: c.fp.NodeID, Capability: capability(cl),
		ReadOnly: cl.AccessMode.ReaderOnly(), Secrets: v.Secrets, VolumeContext: v.Context,
	}
	// Record the intent first: once ControllerPublishVolume may have been sent, the release path
	// must unpublish even if this process dies before the answer is committed.
	st, _, err := e.getStaging(ctx, v.ID)
	if err != nil {
		return err
	}
	if !st.ControllerPublished {
		st.PluginID, st.NodeID, st.ControllerPublished = v.PluginID, c.fp.NodeID, true
		if err := e.store.Update(ctx, func(tx *store.Tx) error { return tx.Stagings().Put(&st) }); err != nil {
			return err
		}
	}
	var pc map[string]string
	err = e.withController(ctx, c, func(ctx context.Context) error {
		return e.retry(ctx, csi.RPCControllerPublishVolume, func(ctx context.Context) error {
			var err error
			pc, err = c.client.ControllerPublishVolume(ctx, req)
			return err
		})
	})
	if err != nil {
		return err
	}
	failpoint("rpc:ControllerPublishVolume")
	cl.PublishContext = pc
	cl.State = store.ClaimControllerPublished
	return e.save(ctx, cl, func(tx *store.Tx) error {
		st, err := tx.Stagings().Get(v.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		st.VolumeID, st.PluginID = v.ID, v.PluginID
		st.NodeID, st.PublishContext, st.ControllerPublished = c.fp.NodeID, pc, true
		return tx.Stagings().Put(&st)
	})
}

func (e *Engine) nodeStage(ctx context.Context, c *conn, v store.Volume, cl *store.Claim) error {
	if !c.stages() {
		cl.State = store.ClaimNodeStaged
		return e.save(ctx, cl, nil)
	}
	st, _, err := e.getStaging(ctx, v.ID)
	if err != nil {
		return err
	}
	if st.Staged {
		// One staging per volume: a later claim shares it.
		cl.State = store.ClaimNodeStaged
		return e.save(ctx, cl, nil)
	}
	path := stagingPath(e.cfg.StateDir, v.PluginID, v.ID)
	if err := os.MkdirAll(path, 0o750); err != nil {
		return fmt.Errorf("staging path: %w", err)
	}
	if st.StagingPath != path {
		// Record the intent first: once NodeStageVolume may have been sent, the release path
		// must unstage even if this process dies before the answer is committed.
		st.PluginID, st.StagingPath = v.PluginID, path
		if err := e.store.Update(ctx, func(tx *store.Tx) error { return tx.Stagings().Put(&st) }); err != nil {
			return err
		}
	}
	req := csi.NodeStageVolumeRequest{
		VolumeID: v.ExternalID, PublishContext: cl.PublishContext, StagingPath: path,
		Capability: capability(cl), Secrets: v.Secrets, VolumeContext: v.Context,
	}
	err = e.retry(ctx, csi.RPCNodeStageVolume, func(ctx context.Context) error {
		return c.client.NodeStageVolume(ctx, req)
	})
	if err != nil {
		return err
	}
	failpoint("rpc:NodeStageVolume")
	st.Staged = true
	cl.State = store.ClaimNodeStaged
	return e.save(ctx, cl, func(tx *store.Tx) error { return tx.Stagings().Put(&st) })
}

func (e *Engine) nodePublish(ctx context.Context, c *conn, v store.Volume, cl *store.Claim) error {
	// volctl makes the target's parent; the plugin makes the target itself.
	if err := os.MkdirAll(filepath.Dir(cl.TargetPath), 0o750); err != nil {
		return fmt.Errorf("publish path: %w", err)
	}
	req := csi.NodePublishVolumeRequest{
		VolumeID: v.ExternalID, PublishContext: cl.PublishContext, TargetPath: cl.TargetPath,
		Capability: capability(cl), ReadOnly: cl.Mode == store.ClaimRead, Secrets: v.Secrets,
		VolumeContext: v.Context,
	}
	if c.stages() {
		req.StagingPath = stagingPath(e.cfg.StateDir, v.PluginID, v.ID)
	}
	err := e.retry(ctx, csi.RPCNodePublishVolume, func(ctx context.Context) error {
		return c.client.NodePublishVolume(ctx, req)
	})
	if err != nil {
		return err
	}
	failpoint("rpc:NodePublishVolume")
	cl.State = store.ClaimPublished
	cl.NeedsReconcile, cl.Attempts = false, 0
	return e.save(ctx, cl, func(tx *store.Tx) error {
		return tx.Events().Append(&store.Event{Kind: "claim", VolumeID: cl.VolumeID, Alloc: cl.Alloc, PluginID: v.PluginID,
			Message: fmt.Sprintf("%s claim published at %s", cl.Mode, cl.TargetPath)})
	})
}
