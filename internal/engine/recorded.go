package engine

import (
	"context"

	"github.com/volctl/volctl/internal/store"
)

// RecordedSnapshots returns the snapshots volctl has recorded for a plugin ("" for every
// plugin), from the store alone: no plugin is asked, so it is quick and works with the plugin
// down (shell completion reads it). ListSnapshots is the full view.
func (e *Engine) RecordedSnapshots(ctx context.Context, pluginID string) ([]SnapshotInfo, error) {
	return byStoredID(ctx, e, store.PluginIDs, pluginID, func(id string) ([]SnapshotInfo, error) { return e.recordedSnapshotsStored(ctx, id) })
}

// recordedSnapshotsStored is RecordedSnapshots of the ID as stored (byStoredID).
func (e *Engine) recordedSnapshotsStored(ctx context.Context, pluginID string) ([]SnapshotInfo, error) {
	var out []SnapshotInfo
	err := e.store.View(ctx, func(tx *store.Tx) error {
		recs, err := tx.Snapshots().List(pluginID)
		for _, r := range recs {
			out = append(out, snapshotInfo(r))
		}
		return err
	})
	return out, err
}

// viewOne returns what read reads in a read transaction of its own: one record, or one list.
func viewOne[T any](ctx context.Context, s *store.Store, read func(*store.Tx) (T, error)) (T, error) {
	var out T
	err := s.View(ctx, func(tx *store.Tx) error {
		var err error
		out, err = read(tx)
		return err
	})
	return out, err
}

// oneOrAll reads the one record named key, or every record when key is empty: the shape of the
// commands that show one thing or all of them (groups, plugins, snapshots by plugin).
func oneOrAll[T any](key string, get func(string) (T, error), list func() ([]T, error)) ([]T, error) {
	if key == "" {
		return list()
	}
	v, err := get(key)
	if err != nil {
		return nil, err
	}
	return []T{v}, nil
}
