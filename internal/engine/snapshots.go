package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// SnapshotInfo is one snapshot: what volctl recorded when it created it, what the plugin reports
// about it, or both.
type SnapshotInfo struct {
	PluginID         string            `json:"plugin_id"`
	ID               string            `json:"id"`                         // the provider's ID: a volume's snapshot_id, `snapshot delete`'s argument
	Name             string            `json:"name,omitempty"`             // the CSI name volctl created it with
	SourceVolumeID   string            `json:"source_volume_id,omitempty"` // volctl's ID of the source, when registered
	SourceExternalID string            `json:"source_external_id"`
	SizeBytes        int64             `json:"size_bytes"`
	ReadyToUse       bool              `json:"ready_to_use"`
	CreatedAt        time.Time         `json:"created_at,omitzero"`
	Parameters       map[string]string `json:"parameters,omitempty"`
	Recorded         bool              `json:"recorded"` // volctl has a record of it (it created it)
	Listed           bool              `json:"listed"`   // the plugin's ListSnapshots reported it just now
	Missing          bool              `json:"missing"`  // recorded, but the plugin's list no longer has it
}

// SnapshotList is what ListSnapshots found. Warnings name the plugins whose snapshots could not
// be listed from the plugin, and why: for those, only volctl's records are shown.
type SnapshotList struct {
	Snapshots []SnapshotInfo `json:"snapshots"`
	Warnings  []string       `json:"warnings"`
}

// maxSnapshotPages bounds paging through ListSnapshots, against a plugin whose tokens never end.
const maxSnapshotPages = 10000

// snapshotName is the CSI name of a snapshot created without one: the volume's CSI name and the
// second it was asked for. Within one command every retry of CreateSnapshot sends the same name,
// so a retried request never makes a second snapshot; two commands make two snapshots. A script
// that must be idempotent across runs (re-run after a crash) passes its own NAME: the plugin
// then returns the snapshot it already made under that name.
func snapshotName(namespace, volumeID string, at time.Time) string {
	return csiName(namespace, volumeID) + "-" + strconv.FormatInt(at.Unix(), 10)
}

// CreateSnapshot snapshots a volume through its plugin (CREATE_DELETE_SNAPSHOT) and records the
// snapshot. An empty name is derived from the volume and the time (see snapshotName).
func (e *Engine) CreateSnapshot(ctx context.Context, volumeID, name string, params map[string]string) (SnapshotInfo, error) {
	fail := func(err error) (SnapshotInfo, error) {
		return SnapshotInfo{}, fmt.Errorf("snapshot volume %q: %w", volumeID, err)
	}
	v, c, unlock, err := e.lockedVolume(ctx, volumeID)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	if v.State != store.VolumeReady {
		return fail(conflictf("volume %q is %s", v.ID, v.State))
	}
	if err := canSnapshot(c, "snapshot volumes"); err != nil {
		return fail(err)
	}
	if name == "" {
		name = snapshotName(v.Namespace, v.ID, e.cfg.Now())
	}
	var snap csi.Snapshot
	err = e.withController(ctx, c, func(ctx context.Context) error {
		return e.retry(ctx, c, csi.RPCCreateSnapshot, func(ctx context.Context) error {
			var err error
			snap, err = c.client.CreateSnapshot(ctx, csi.CreateSnapshotRequest{
				SourceVolumeID: v.ExternalID, Name: name, Secrets: v.Secrets, Parameters: params})
			return err
		})
	})
	if err != nil {
		return fail(fmt.Errorf("snapshot %q: %w", name, err))
	}
	rec := store.Snapshot{
		PluginID: v.PluginID, SnapshotID: snap.ID, Name: name, SourceVolumeID: v.ID,
		SourceExternalID: v.ExternalID, SizeBytes: snap.SizeBytes, ReadyToUse: snap.ReadyToUse,
		Parameters: params, CreatedAt: snap.CreatedAt,
	}
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		// Created again under the same name, the plugin returned the snapshot it made the first
		// time: that one was made with the first request's parameters.
		if old, err := tx.Snapshots().Get(rec.PluginID, rec.SnapshotID); err == nil {
			rec.Parameters = old.Parameters
		}
		if err := tx.Snapshots().Put(&rec); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "snapshot-create", VolumeID: v.ID, PluginID: v.PluginID,
			RPC: csi.RPCCreateSnapshot, Message: fmt.Sprintf("snapshot %q (%s) of volume %q created", snap.ID, name, v.ID)})
	})
	if err != nil {
		return fail(fmt.Errorf("the plugin made snapshot %q but recording it failed: %w", snap.ID, err))
	}
	info := snapshotInfo(rec)
	info.ReadyToUse = snap.ReadyToUse
	return info, nil
}

// canSnapshot refuses a plugin without CREATE_DELETE_SNAPSHOT, saying what could not be done.
func canSnapshot(c *conn, what string) error {
	if !c.fp.Controller || !c.fp.Capabilities.Controller.CreateDeleteSnapshot {
		return invalidf("plugin %q cannot %s (no CREATE_DELETE_SNAPSHOT controller capability)", c.plugin.ID, what)
	}
	return nil
}

// DeleteSnapshot deletes a snapshot through its plugin and forgets volctl's record of it.
// A snapshot the plugin does not know counts as deleted (the CSI spec makes DeleteSnapshot
// idempotent). The source volume's secrets are sent when volctl knows the source.
func (e *Engine) DeleteSnapshot(ctx context.Context, pluginID, snapshotID string) error {
	fail := func(err error) error {
		return fmt.Errorf("delete snapshot %q of plugin %q: %w", snapshotID, pluginID, err)
	}
	if snapshotID == "" {
		return fail(invalidf("the snapshot ID is empty"))
	}
	c, err := e.connect(ctx, pluginID)
	if err != nil {
		return fail(err)
	}
	if err := canSnapshot(c, "delete snapshots"); err != nil {
		return fail(err)
	}
	var (
		rec      store.Snapshot
		recorded bool
		v        store.Volume
	)
	err = e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		rec, err = tx.Snapshots().Get(pluginID, snapshotID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		recorded = true
		if rec.SourceVolumeID == "" {
			return nil
		}
		v, err = tx.Volumes().Get(rec.SourceVolumeID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && v.PluginID != pluginID) {
			v = store.Volume{} // the source was deregistered (and maybe its ID reused): no secrets
			return nil
		}
		return err
	})
	if err != nil {
		return fail(err)
	}
	err = e.withController(ctx, c, func(ctx context.Context) error {
		return e.retry(ctx, c, csi.RPCDeleteSnapshot, func(ctx context.Context) error {
			return c.client.DeleteSnapshot(ctx, csi.DeleteSnapshotRequest{SnapshotID: snapshotID, Secrets: v.Secrets})
		})
	})
	if err != nil && !csi.IsIgnorable(err) {
		return fail(err)
	}
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		if recorded {
			if err := tx.Snapshots().Delete(pluginID, snapshotID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return tx.Events().Append(&store.Event{Kind: "snapshot-delete", VolumeID: rec.SourceVolumeID, PluginID: pluginID,
			RPC: csi.RPCDeleteSnapshot, Message: fmt.Sprintf("snapshot %q deleted", snapshotID)})
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// ListSnapshots lists the snapshots of one plugin, or of every registered plugin when pluginID
// is empty. A plugin with LIST_SNAPSHOTS is asked, and its answer is merged with volctl's
// records (which add the CSI name, the source's volctl ID and the parameters); for a plugin
// without it, or one that cannot be reached, volctl's records are shown and a warning says so.
func (e *Engine) ListSnapshots(ctx context.Context, pluginID string) (SnapshotList, error) {
	out := SnapshotList{Snapshots: []SnapshotInfo{}, Warnings: []string{}}
	var (
		plugins []store.Plugin
		records []store.Snapshot
		vols    []store.Volume
	)
	err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if pluginID != "" {
			p, err := tx.Plugins().Get(pluginID)
			if err != nil {
				return err
			}
			plugins = []store.Plugin{p}
		} else if plugins, err = tx.Plugins().List(); err != nil {
			return err
		}
		if records, err = tx.Snapshots().List(pluginID); err != nil {
			return err
		}
		vols, err = tx.Volumes().List(store.VolumeFilter{PluginID: pluginID})
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return out, notFoundf("list snapshots: plugin %q is not registered", pluginID)
	}
	if err != nil {
		return out, fmt.Errorf("list snapshots: %w", err)
	}
	byPlugin := map[string][]store.Snapshot{}
	for _, r := range records {
		byPlugin[r.PluginID] = append(byPlugin[r.PluginID], r)
	}
	// A snapshot the plugin reports names its source by external ID; volctl's ID is more useful.
	volumeOf := map[[2]string]string{}
	for _, v := range vols {
		if v.ExternalID != "" {
			volumeOf[[2]string{v.PluginID, v.ExternalID}] = v.ID
		}
	}

	for _, p := range plugins {
		recs := byPlugin[p.ID]
		delete(byPlugin, p.ID)
		listed, why := e.listPluginSnapshots(ctx, p, pluginID != "" || len(recs) > 0)
		if why != "" {
			out.Warnings = append(out.Warnings, fmt.Sprintf("plugin %q: %s: showing volctl's records only", p.ID, why))
		}
		out.Snapshots = append(out.Snapshots, mergeSnapshots(p.ID, listed, recs, why == "", volumeOf)...)
	}
	// Records of plugins no longer registered (deregistered with --force).
	for _, id := range sortedKeys(byPlugin) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("plugin %q is not registered: showing volctl's records only", id))
		out.Snapshots = append(out.Snapshots, mergeSnapshots(id, nil, byPlugin[id], false, volumeOf)...)
	}
	sort.SliceStable(out.Snapshots, func(i, j int) bool {
		a, b := out.Snapshots[i], out.Snapshots[j]
		if a.PluginID != b.PluginID {
			return a.PluginID < b.PluginID
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
	return out, nil
}

// listPluginSnapshots pages through a plugin's ListSnapshots. why is non-empty when the plugin
// was not (fully) listed; a plugin without a controller service is skipped quietly unless
// the caller cares about it (it was named, or volctl has records of it).
func (e *Engine) listPluginSnapshots(ctx context.Context, p store.Plugin, cares bool) (snaps []csi.Snapshot, why string) {
	c, err := e.connectPlugin(ctx, p, true)
	if err != nil {
		return nil, err.Error()
	}
	switch {
	case !c.fp.Controller && !cares:
		return nil, ""
	case !c.fp.Controller || !c.fp.Capabilities.Controller.ListSnapshots:
		return nil, "cannot list snapshots (no LIST_SNAPSHOTS controller capability)"
	}
	err = e.withController(ctx, c, func(ctx context.Context) error {
		token := ""
		for range maxSnapshotPages {
			var page csi.ListSnapshotsResponse
			err := e.retry(ctx, c, csi.RPCListSnapshots, func(ctx context.Context) error {
				var err error
				page, err = c.client.ListSnapshots(ctx, csi.ListSnapshotsRequest{StartingToken: token})
				return err
			})
			if err != nil {
				return err
			}
			snaps = append(snaps, page.Snapshots...)
			if page.NextToken == "" || page.NextToken == token {
				return nil
			}
			token = page.NextToken
		}
		return fmt.Errorf("%s: more than %d pages", csi.RPCListSnapshots, maxSnapshotPages)
	})
	if err != nil {
		return nil, err.Error()
	}
	return snaps, ""
}

// mergeSnapshots joins what a plugin listed with volctl's records of its snapshots. When the
// plugin was listed (complete), a record it did not report is marked missing.
func mergeSnapshots(pluginID string, listed []csi.Snapshot, recs []store.Snapshot, complete bool, volumeOf map[[2]string]string) []SnapshotInfo {
	byID := map[string]store.Snapshot{}
	for _, r := range recs {
		byID[r.SnapshotID] = r
	}
	out := make([]SnapshotInfo, 0, len(listed)+len(recs))
	seen := map[string]bool{}
	for _, s := range listed {
		if seen[s.ID] {
			continue // a plugin paging while snapshots come and go may repeat one
		}
		seen[s.ID] = true
		info := SnapshotInfo{PluginID: pluginID, ID: s.ID, SourceExternalID: s.SourceVolumeID,
			SizeBytes: s.SizeBytes, ReadyToUse: s.ReadyToUse, CreatedAt: s.CreatedAt, Listed: true,
			SourceVolumeID: volumeOf[[2]string{pluginID, s.SourceVolumeID}]}
		if r, ok := byID[s.ID]; ok {
			info.Recorded, info.Name, info.Parameters = true, r.Name, maps.Clone(r.Parameters)
			if info.SourceVolumeID == "" {
				info.SourceVolumeID = r.SourceVolumeID
			}
			if info.CreatedAt.IsZero() {
				info.CreatedAt = r.CreatedAt
			}
		}
		out = append(out, info)
	}
	for _, r := range recs {
		if seen[r.SnapshotID] {
			continue
		}
		info := snapshotInfo(r)
		info.Missing = complete
		out = append(out, info)
	}
	return out
}

func snapshotInfo(r store.Snapshot) SnapshotInfo {
	return SnapshotInfo{
		PluginID: r.PluginID, ID: r.SnapshotID, Name: r.Name, SourceVolumeID: r.SourceVolumeID,
		SourceExternalID: r.SourceExternalID, SizeBytes: r.SizeBytes, ReadyToUse: r.ReadyToUse,
		CreatedAt: r.CreatedAt, Parameters: maps.Clone(r.Parameters), Recorded: true,
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
