package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// OwedWork is work volctl owes that no live claim drives, and that `volctl reconcile` (and every
// agent pass) does: a volume's create or delete under way or cut short, a ControllerExpandVolume
// whose answer is not recorded, a staging or an attachment no claim uses, a snapshot's create or
// delete under way or cut short. `volctl status` lists it beside the claims not at rest: before,
// a summary read "0 not at rest" while reconcile had a problem to report (an attachment owed
// through a plugin that lost PUBLISH_UNPUBLISH_VOLUME), and the summary was the one place a
// user looked to see whether anything was left.
type OwedWork struct {
	// Kind is create, delete, expand, node-expand, unstage, unpublish, snapshot-create or
	// snapshot-delete.
	Kind string `json:"kind"`
	// VolumeID is the volume, or the snapshot's source volume; "" for a snapshot's delete.
	VolumeID string `json:"volume_id,omitempty"`
	PluginID string `json:"plugin_id"`
	// Snapshot is the snapshot's name (snapshot-create) or ID (snapshot-delete).
	Snapshot string `json:"snapshot,omitempty"`
	// What says it in words, naming the path, node or size.
	What string `json:"what"`
	// Since is when the work was recorded (the row's last change), zero where not known (a
	// snapshot's delete an older volctl recorded without a time).
	Since time.Time `json:"since,omitzero"`
}

// The kinds of OwedWork.
const (
	OwedCreate         = "create"
	OwedDelete         = "delete"
	OwedExpand         = "expand"
	OwedNodeExpand     = "node-expand"
	OwedUnstage        = "unstage"
	OwedUnpublish      = "unpublish"
	OwedSnapshotCreate = "snapshot-create"
	OwedSnapshotDelete = "snapshot-delete"
)

// Owed lists the work volctl owes that no live claim drives (OwedWork), volumes first in ID
// order, then snapshots. It reads the rows a reconcile pass acts on, in one read transaction,
// and asks no plugin: what a pass would find, not whether it can do it. Left out, as reconcile
// leaves them: a volume handed over to Nomad's pending expansion and its attachment with no
// staging (both wait for the volume to be taken back, keptForNomad). Not listed either: a
// NodeExpandVolume owed that waits for something else than a pass (the volume's next publish,
// its release through a plugin that expands offline, a plugin started with the capability), as
// `volume status` says (NodeExpansionWaits); one a pass sends is listed (OwedNodeExpand): left
// out, the summary said "0 not at rest" and listed nothing of a published volume whose file
// system reconcile then grew (TestStatusSummaryListsANodeExpansionOwedOnAPublishedVolume).
func (e *Engine) Owed(ctx context.Context) ([]OwedWork, error) {
	return viewOne(ctx, e.store, func(tx *store.Tx) ([]OwedWork, error) {
		out := []OwedWork{}
		vols, err := tx.Volumes().List(store.VolumeFilter{Owing: true})
		if err != nil {
			return nil, err
		}
		handovers, err := tx.Handovers().List()
		if err != nil {
			return nil, err
		}
		handed := map[string]bool{}
		for _, h := range handovers {
			handed[h.VolumeID] = true
		}
		for _, v := range vols {
			w := OwedWork{VolumeID: v.ID, PluginID: v.PluginID, Since: v.UpdatedAt}
			switch {
			case v.State == store.VolumeCreating:
				w.Kind, w.What = OwedCreate, "its create is under way or was cut short (CreateVolume's answer is not recorded)"
			case v.State == store.VolumeDeleting:
				w.Kind, w.What = OwedDelete, "its delete is under way or was cut short"
			case handed[v.ID]:
				continue
			case v.ExpandMin > 0:
				w.Kind, w.What = OwedExpand, fmt.Sprintf("a ControllerExpandVolume to %s was sent and its answer is not recorded", spec.FormatSize(v.ExpandMin))
				if v.ExpandBeneathMin > 0 {
					// Written over an earlier one whose answer was lost too: that one, which the
					// plugin may have done, is what reconcile falls back to (giveWayToBeneath).
					w.What = fmt.Sprintf("a ControllerExpandVolume to %s was sent, or about to be, and its answer is not recorded, over an earlier one to %s whose answer was lost too",
						spec.FormatSize(v.ExpandMin), spec.FormatSize(v.ExpandBeneathMin))
				}
			}
			if w.Kind != "" {
				out = append(out, w)
			}
			if v.State == store.VolumeReady && v.NodeExpandMin > 0 && !handed[v.ID] {
				if w, ok, err := owedNodeStep(tx, v); err != nil || ok {
					if err != nil {
						return nil, err
					}
					out = append(out, w)
				}
			}
		}
		stagings, err := tx.Stagings().List()
		if err != nil {
			return nil, err
		}
		var claimed map[string]bool
		if len(stagings) > 0 {
			if claimed, err = tx.Claims().Claimed(); err != nil {
				return nil, err
			}
		}
		for _, st := range stagings {
			if st.StagingPath == "" && !st.ControllerPublished || claimed[st.VolumeID] {
				continue
			}
			w := OwedWork{VolumeID: st.VolumeID, PluginID: st.PluginID, Since: st.UpdatedAt}
			switch {
			case st.StagingPath != "":
				w.Kind, w.What = OwedUnstage, fmt.Sprintf("staged at %s, and no claim uses it", st.StagingPath)
				if !st.Staged {
					w.What = fmt.Sprintf("a NodeStageVolume or NodeUnstageVolume at %s is not recorded done, and no claim uses it", st.StagingPath)
				}
				if st.ControllerPublished {
					w.What += fmt.Sprintf("; attached to node %q", attachedNode(st))
				}
			case handed[st.VolumeID]:
				continue
			default:
				w.Kind, w.What = OwedUnpublish, fmt.Sprintf("attached to node %q, and no claim holds the attachment (ControllerUnpublishVolume owed)", attachedNode(st))
			}
			out = append(out, w)
		}
		slices.SortStableFunc(out, func(a, b OwedWork) int { return cmp.Compare(a.VolumeID, b.VolumeID) })
		creates, err := tx.Snapshots().ListCreates("")
		if err != nil {
			return nil, err
		}
		for _, c := range creates {
			what := fmt.Sprintf("snapshot %q: its create is under way or was cut short", c.Name)
			if c.SourceVolumeID != "" {
				what = fmt.Sprintf("snapshot %q of volume %q: its create is under way or was cut short", c.Name, c.SourceVolumeID)
			}
			out = append(out, OwedWork{Kind: OwedSnapshotCreate, VolumeID: c.SourceVolumeID, PluginID: c.PluginID, Snapshot: c.Name, What: what, Since: c.CreatedAt})
		}
		deletes, err := tx.Snapshots().ListDeleting()
		if err != nil {
			return nil, err
		}
		for _, d := range deletes {
			out = append(out, OwedWork{Kind: OwedSnapshotDelete, PluginID: d.PluginID, Snapshot: d.SnapshotID, Since: d.CreatedAt,
				What: fmt.Sprintf("snapshot %q: its delete is under way or was cut short", d.SnapshotID)})
		}
		return out, nil
	})
}

// owedNodeStep is volume v's owed NodeExpandVolume as owed work, with ok when a reconcile pass
// sends something of it (passPaysOwed): what `volume status` says of it (owedExpansionWaits),
// from the same rows.
func owedNodeStep(tx *store.Tx, v store.Volume) (w OwedWork, ok bool, err error) {
	claims, err := tx.Claims().ByVolume(v.ID)
	if err != nil {
		return w, false, err
	}
	p, perr := tx.Plugins().Get(v.PluginID)
	if perr != nil && !errors.Is(perr, store.ErrNotFound) {
		return w, false, perr
	}
	st, serr := tx.Stagings().Get(v.ID)
	if serr != nil && !errors.Is(serr, store.ErrNotFound) {
		return w, false, serr
	}
	if !passPaysOwed(v, p, perr == nil, claims, st) {
		return w, false, nil
	}
	return OwedWork{Kind: OwedNodeExpand, VolumeID: v.ID, PluginID: v.PluginID, Since: v.UpdatedAt,
		What: fmt.Sprintf("its file system is owed a NodeExpandVolume to %s: %s", spec.FormatSize(v.NodeExpandMin), owedExpansionWaits(v, p, perr == nil, claims, st, nil))}, true, nil
}
