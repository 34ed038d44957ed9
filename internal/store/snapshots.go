package store

import (
	"database/sql"
	"fmt"
	"time"
)

// Snapshot is a CSI snapshot volctl created or learned about, keyed by its plugin and the
// provider's snapshot ID.
type Snapshot struct {
	PluginID         string
	SnapshotID       string
	Name             string
	SourceVolumeID   string // volctl's volume ID, "" if the source is not registered
	SourceExternalID string
	SizeBytes        int64
	ReadyToUse       bool
	Parameters       map[string]string
	CreatedAt        time.Time // the provider's creation time when it gave one
}

// SnapshotStore reads and writes snapshots.
type SnapshotStore interface {
	// Get returns one snapshot, or an error matching ErrNotFound.
	Get(pluginID, snapshotID string) (Snapshot, error)
	// List returns the snapshots of a plugin ("" for all), ordered by plugin and snapshot ID.
	List(pluginID string) ([]Snapshot, error)
	// Put inserts or replaces a snapshot; a zero CreatedAt is stamped with the current time.
	Put(sn *Snapshot) error
	// Delete removes a snapshot; ErrNotFound if there is none.
	Delete(pluginID, snapshotID string) error
}

// Snapshots is the snapshot API inside this transaction.
func (tx *Tx) Snapshots() SnapshotStore { return snapshots{tx} }

type snapshots struct{ tx *Tx }

const snapshotColumns = `plugin_id, snapshot_id, name, source_volume_id, source_external_id, size_bytes,
	ready_to_use, parameters, created_at`

func scanSnapshot(sc scanner) (Snapshot, error) {
	var (
		sn     Snapshot
		params sql.NullString
		c      int64
	)
	if err := sc.Scan(&sn.PluginID, &sn.SnapshotID, &sn.Name, &sn.SourceVolumeID, &sn.SourceExternalID,
		&sn.SizeBytes, &sn.ReadyToUse, &params, &c); err != nil {
		return Snapshot{}, err
	}
	if err := decJSON(params, &sn.Parameters); err != nil {
		return Snapshot{}, fmt.Errorf("%s: decode: %w", snapshotWhat(sn.PluginID, sn.SnapshotID), err)
	}
	sn.CreatedAt = decTime(c)
	return sn, nil
}

func snapshotWhat(pluginID, snapshotID string) string {
	return fmt.Sprintf("snapshot %q of plugin %q", snapshotID, pluginID)
}

func (ss snapshots) Get(pluginID, snapshotID string) (Snapshot, error) {
	sn, err := scanSnapshot(ss.tx.queryRow(`SELECT `+snapshotColumns+` FROM snapshots WHERE plugin_id = ? AND snapshot_id = ?`,
		pluginID, snapshotID))
	if err != nil {
		return Snapshot{}, wrap(err, snapshotWhat(pluginID, snapshotID), "")
	}
	return sn, nil
}

func (ss snapshots) List(pluginID string) ([]Snapshot, error) {
	rows, err := ss.tx.query(`SELECT `+snapshotColumns+` FROM snapshots WHERE ? = '' OR plugin_id = ?
		ORDER BY plugin_id, snapshot_id`, pluginID, pluginID)
	out, err := collect(rows, err, scanSnapshot)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", mapBusy(err))
	}
	return out, nil
}

func (ss snapshots) Put(sn *Snapshot) error {
	what := snapshotWhat(sn.PluginID, sn.SnapshotID)
	params, err := encJSON(sn.Parameters)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", what, err)
	}
	if sn.CreatedAt.IsZero() {
		sn.CreatedAt = ss.tx.now()
	}
	sn.CreatedAt = decTime(encTime(sn.CreatedAt)) // as it will read back
	_, err = ss.tx.exec(`INSERT OR REPLACE INTO snapshots (`+snapshotColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sn.PluginID, sn.SnapshotID, sn.Name, sn.SourceVolumeID, sn.SourceExternalID, sn.SizeBytes,
		encBool(sn.ReadyToUse), params, encTime(sn.CreatedAt))
	return wrap(err, what, "")
}

func (ss snapshots) Delete(pluginID, snapshotID string) error {
	res, err := ss.tx.exec(`DELETE FROM snapshots WHERE plugin_id = ? AND snapshot_id = ?`, pluginID, snapshotID)
	return affected(res, err, snapshotWhat(pluginID, snapshotID), "")
}
