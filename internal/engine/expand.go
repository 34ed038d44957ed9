package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// ExpandVolume grows a volume to at least size bytes (and at most limit, when not 0):
// ControllerExpandVolume when the controller can expand, then NodeExpandVolume for each live
// claim when the plugin says the node must expand too. Shrinking is refused; a plugin that only
// expands offline is refused while the volume is in use.
func (e *Engine) ExpandVolume(ctx context.Context, volumeID string, size, limit int64) (VolumeInfo, error) {
	fail := func(err error) (VolumeInfo, error) {
		return VolumeInfo{}, fmt.Errorf("expand volume %q: %w", volumeID, err)
	}
	v, c, unlock, err := e.lockedVolume(ctx, volumeID)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	return e.expandLocked(ctx, c, v, size, limit)
}

// currentSize is the best known size of a volume: what the plugin reported, else what was asked.
func currentSize(v store.Volume) int64 {
	if v.CapacityBytes > 0 {
		return v.CapacityBytes
	}
	return v.RequestedMin
}

// expandLocked is ExpandVolume with the volume lock held and the plugin connected.
func (e *Engine) expandLocked(ctx context.Context, c *conn, v store.Volume, size, limit int64) (VolumeInfo, error) {
	fail := func(err error) (VolumeInfo, error) {
		return VolumeInfo{}, fmt.Errorf("expand volume %q: %w", v.ID, err)
	}
	if v.State != store.VolumeReady {
		return fail(conflictf("volume %q is %s", v.ID, v.State))
	}
	cur := currentSize(v)
	switch {
	case size <= 0:
		return fail(invalidf("the new size must be positive"))
	case limit != 0 && limit < size:
		return fail(invalidf("the limit %s is below the new size %s", spec.FormatSize(limit), spec.FormatSize(size)))
	case size < cur:
		return fail(invalidf("volumes cannot shrink: %q is %s, %s asked", v.ID, spec.FormatSize(cur), spec.FormatSize(size)))
	case size == cur:
		return e.Volume(ctx, v.ID)
	}
	ctrl, node := c.fp.Controller && c.fp.Capabilities.Controller.ExpandVolume, c.fp.Node && c.fp.Capabilities.Node.ExpandVolume
	if !ctrl && !node {
		return fail(invalidf("plugin %q cannot expand volumes (no EXPAND_VOLUME capability)", v.PluginID))
	}
	var claims []store.Claim
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		claims, err = tx.Claims().ByVolume(v.ID)
		return err
	}); err != nil {
		return fail(err)
	}
	pc := c.fp.Capabilities.Plugin
	if len(claims) > 0 && pc.VolumeExpansionOffline && !pc.VolumeExpansionOnline {
		return fail(conflictf("plugin %q only expands volumes offline and %q is in use by %s: release its claims first",
			v.PluginID, v.ID, describeClaims(claims)))
	}

	newSize, nodeRequired := size, node
	if ctrl {
		var resp csi.ControllerExpandVolumeResponse
		err := e.withController(ctx, c, func(ctx context.Context) error {
			return e.retry(ctx, c, csi.RPCControllerExpandVolume, func(ctx context.Context) error {
				var err error
				resp, err = c.client.ControllerExpandVolume(ctx, csi.ControllerExpandVolumeRequest{
					VolumeID: v.ExternalID, CapacityMin: size, CapacityMax: limit, Secrets: v.Secrets})
				return err
			})
		})
		if err != nil {
			return fail(err)
		}
		if resp.CapacityBytes > 0 {
			newSize = resp.CapacityBytes
		}
		nodeRequired = resp.NodeExpansionRequired && node
	}
	v.CapacityBytes, v.RequestedMin = newSize, max(v.RequestedMin, size)
	if limit != 0 {
		v.RequestedMax = limit
	}
	if err := e.store.Update(ctx, func(tx *store.Tx) error {
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID,
			Message: fmt.Sprintf("volume %q expanded to %s", v.ID, spec.FormatSize(newSize))})
	}); err != nil {
		return fail(err)
	}
	if nodeRequired {
		for i := range claims {
			cl := &claims[i]
			if cl.State != store.ClaimPublished {
				continue // a claim not yet published is sized when it is staged
			}
			req := csi.NodeExpandVolumeRequest{VolumeID: v.ExternalID, VolumePath: cl.TargetPath,
				CapacityMin: size, CapacityMax: limit, Secrets: v.Secrets}
			vc := capability(cl)
			req.Capability = &vc
			if c.stages() {
				req.StagingPath = stagingPath(e.cfg.StateDir, v.PluginID, v.ID)
			}
			err := e.retry(ctx, c, csi.RPCNodeExpandVolume, func(ctx context.Context) error {
				_, err := c.client.NodeExpandVolume(ctx, req)
				return err
			})
			if err != nil {
				return fail(fmt.Errorf("the controller expanded the volume, but the node expansion for alloc %q failed: %w (run the expand again)", cl.Alloc, err))
			}
		}
	}
	return e.Volume(ctx, v.ID)
}

// lockedVolume starts an operation on one existing volume: it takes the volume's lock, reads the
// volume and connects to its plugin. The caller must call unlock when err is nil.
func (e *Engine) lockedVolume(ctx context.Context, id string) (v store.Volume, c *conn, unlock func(), err error) {
	if unlock, err = e.locks.volume(ctx, id); err != nil {
		return v, nil, nil, err
	}
	err = e.store.View(ctx, func(tx *store.Tx) error {
		v, err = tx.Volumes().Get(id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		err = notFoundf("volume %q not found", id)
	}
	if err == nil {
		c, err = e.connect(ctx, v.PluginID)
	}
	if err != nil {
		unlock()
		return v, nil, nil, err
	}
	return v, c, unlock, nil
}
