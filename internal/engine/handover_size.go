package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// SizeCheck is what a take-back (TakeBack) learnt of a volume's size from its plugin. Nomad grows
// a volume it has through the plugin (a registration asking a larger capacity_min: `nomad volume
// register`), while volctl refuses to expand a volume handed over, so its record stayed at the
// size it handed over: `volume status` showed that, a handover again sent it as capacity_min,
// and an expand between the two sizes was sent as a growth. The plugin is asked what size the
// volume's storage has (ListVolumes where the plugin lists volumes, else ControllerGetVolume),
// and a larger one recorded. A file system grown by Nomad only where its allocs had the volume
// is owed a NodeExpandVolume to the new size when the plugin's node can expand (CSI makes it
// idempotent): sent at the next publish, or by reconcile where the volume is staged here, as an
// expand's. A smaller size, or none, changes nothing (volumes never shrink).
type SizeCheck struct {
	// Asked is the RPC the plugin was asked by (ListVolumes, else ControllerGetVolume); "" when
	// nothing was asked: the plugin cannot say (CannotSay), or the volume is not ready.
	Asked string
	// CannotSay: the plugin has no RPC that says a volume's size (no LIST_VOLUMES nor
	// GET_VOLUME, or no controller here).
	CannotSay bool
	// Recorded is the size volctl had recorded (0: unknown); Listed the plugin's (0 when it
	// did not list the volume, or answered no size).
	Recorded, Listed int64
	// Grown: Listed is larger than Recorded, and is the volume's recorded size now.
	Grown bool
	// Learnt: Listed is the volume's recorded size now, where none was recorded (Recorded 0):
	// whether Nomad grew it is not known, and it is not said grown
	// (TestNomadReleaseOfAVolumeOfUnknownSizeDoesNotSayNomadGrewIt).
	Learnt bool
	// ByOwnExpand: the volume was handed over with a ControllerExpandVolume of volctl's own
	// pending (forced), to Pending, which Listed reaches: the growth may be that one's.
	ByOwnExpand bool
	Pending     int64
	// NotListed: the plugin's whole listing (ListVolumes), or its ControllerGetVolume's
	// NOT_FOUND, says it has no volume of the record's external ID: its storage was deleted
	// while in Nomad (`nomad volume delete`), and a claim would fail NOT_FOUND
	// (TestNomadReleaseOfAVolumeDeletedInNomadSaysItsStorageIsGone).
	NotListed bool
	// NodeOwed is the NodeExpandVolume owed since (0: none): the size, when the plugin's node
	// service can expand and the record had a size the file system was grown to.
	NodeOwed int64
	// PayWith is the claim and release that pay NodeOwed (payOwedNodeStep), when it is owed.
	PayWith string
}

// ErrSizeNotAnswered is matched by a take-back's size error (TakeBackResult.SizeErr) when the
// volume's plugin could not be reached or did not answer: one its plugin's other volumes would
// meet too, which a command taking many back need not ask again.
var ErrSizeNotAnswered = errors.New("the plugin did not say what size the volume has")

// sizeNotAnswered is an error of the plugin's in askSize (ErrSizeNotAnswered), its
// text the cause's.
type sizeNotAnswered struct{ error }

func (s sizeNotAnswered) Unwrap() error      { return s.error }
func (sizeNotAnswered) Is(target error) bool { return target == ErrSizeNotAnswered }

// askSize is a take-back's question to the plugin of volume v, read under its lock, which
// the caller holds: what size the plugin lists it at, and the node expansion a larger one would
// owe (NodeOwed). Nothing is asked of a volume that is not ready, nor when skip (when set) says
// why not, which is then the error (ErrSizeNotAnswered).
func (e *Engine) askSize(ctx context.Context, v store.Volume, skip func(pluginID string) error) (SizeCheck, error) {
	out := SizeCheck{Recorded: v.CapacityBytes}
	if v.State != store.VolumeReady {
		return out, nil
	}
	if skip != nil {
		if err := skip(v.PluginID); err != nil {
			return out, sizeNotAnswered{err}
		}
	}
	c, err := e.connect(ctx, v.PluginID)
	if err != nil {
		return out, sizeNotAnswered{err}
	}
	defer e.done(c)
	if out.Asked = volumeCheck(c); out.Asked == "" {
		out.CannotSay = true
		return out, nil
	}
	err = e.withController(ctx, c, func(ctx context.Context) error {
		var err error
		var listed bool
		out.Listed, listed, err = e.listedSize(ctx, c, out.Asked, v.ExternalID)
		out.NotListed = err == nil && !listed
		return err
	})
	if err != nil {
		return out, sizeNotAnswered{fmt.Errorf("volume %q: %s of plugin %q: %w", v.ID, out.Asked, v.PluginID, err)}
	}
	if out.Listed > currentSize(v) && v.CapacityBytes > 0 && c.fp.Node && c.fp.Capabilities.Node.ExpandVolume {
		out.NodeOwed = out.Listed
	}
	return out, nil
}

// recordListedSize records out.Listed, what askSize learnt of volume v, as its size in tx when
// it is larger than the record's (an expand meanwhile may have grown it), with the node
// expansion owed, and sets out.Grown (out.Learnt where no size was recorded); otherwise it
// clears out.NodeOwed and changes nothing.
func recordListedSize(tx *store.Tx, v store.Volume, out *SizeCheck) error {
	cur, err := tx.Volumes().Get(v.ID)
	if err != nil {
		return err
	}
	if out.Listed <= currentSize(cur) {
		out.NodeOwed = 0
		return nil // grown by an expand meanwhile, or never larger
	}
	cur.CapacityBytes = out.Listed
	msg := fmt.Sprintf("volume %q is %s as plugin %q lists it, grown while handed over to Nomad (volctl had %s): recorded",
		v.ID, spec.FormatSize(out.Listed), v.PluginID, spec.FormatSize(currentSize(v)))
	switch {
	case v.CapacityBytes == 0:
		// No size recorded: currentSize is its capacity_min, not a size it had, and what is
		// listed above it is learnt, not grown (Nomad may have grown it or not).
		out.Learnt = true
		msg = fmt.Sprintf("volume %q is %s as plugin %q lists it: its size, not known before, is recorded now (whether it grew while handed over to Nomad is not known)",
			v.ID, spec.FormatSize(out.Listed), v.PluginID)
	case v.ExpandMin > 0 && out.Listed >= v.ExpandMin:
		out.ByOwnExpand, out.Pending = true, v.ExpandMin
		msg = fmt.Sprintf("volume %q is %s as plugin %q lists it (volctl had %s): grown by the ControllerExpandVolume to %s pending when it was handed over, or while in Nomad: recorded",
			v.ID, spec.FormatSize(out.Listed), v.PluginID, spec.FormatSize(currentSize(v)), spec.FormatSize(v.ExpandMin))
	}
	if out.NodeOwed > 0 {
		out.PayWith = payOwedNodeStep(cur)
		cur.NodeExpandMin, cur.NodeExpandMax = max(cur.NodeExpandMin, out.NodeOwed), 0
		// The plugin lists the storage at that size: its controller has had it, and only the
		// node's step is owed (sent alone, even by a plugin that expands only offline).
		cur.NodeExpandControllerDone = out.Listed >= cur.NodeExpandMin
		msg += "; the node expansion is owed"
	}
	if err := tx.Volumes().Update(&cur); err != nil {
		return err
	}
	out.Grown = !out.Learnt
	return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: out.Asked, Message: msg})
}

// listedSize is the size the plugin answers rpc (ListVolumes or ControllerGetVolume) with for
// its volume externalID: 0 when it does not list it, answers about another volume, or answers
// a negative size, which CSI does not allow; listed is whether it named the volume (false with
// no error: its whole listing, or its NOT_FOUND, says it has none). ListVolumes is paged until the page naming it
// (maxCheckPages, as listsID); a page naming it twice at two sizes answers the smaller, a
// listing that disagrees with itself giving no size the storage may not have: the first entry
// was taken, and a ControllerExpandVolume sent again skipped on its word
// (TestExpandRetryAsksAListingThatNamesTheVolumeTwice). The caller holds the plugin's
// controller lock, so the listing has the time bound of the other checks under it too
// (boundCheck, Config.ListCheck): a plugin that answers each page slowly, with a fresh token
// each time, held an expand's retry and every other create, delete and publish through the
// plugin for maxCheckPages pages (TestExpandSizeListingIsTimeBounded).
func (e *Engine) listedSize(ctx context.Context, c *conn, rpc, externalID string) (size int64, listed bool, err error) {
	switch rpc {
	case csi.RPCListVolumes:
		err := e.boundCheck(ctx, func(ctx context.Context) error {
			return e.listPages(ctx, c, rpc, maxCheckPages, func(ctx context.Context, token string) (string, bool, error) {
				page, err := c.client.ListVolumes(ctx, csi.ListVolumesRequest{StartingToken: token})
				if err != nil {
					return "", false, err
				}
				found := false
				for _, en := range page.Entries {
					if en.Volume.ID == externalID {
						// Named twice, at two sizes: the smaller, the safe answer (a size the storage
						// may not have, taken, records it grown or skips the RPC that grows it).
						if !found || en.Volume.CapacityBytes < size {
							size = en.Volume.CapacityBytes
						}
						found = true
					}
				}
				listed = listed || found
				return page.NextToken, found, nil
			})
		})
		if err != nil {
			return 0, false, err
		}
	case csi.RPCControllerGetVolume:
		found, got, err := e.getsVolume(ctx, c, externalID)
		if err != nil || !found {
			return 0, false, err
		}
		if got.Volume.ID != externalID {
			return 0, true, nil // about another volume: nothing said of this one's absence
		}
		listed, size = true, got.Volume.CapacityBytes
	}
	return max(size, 0), listed, nil
}
