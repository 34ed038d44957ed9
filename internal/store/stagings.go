package store

import (
	"database/sql"
	"fmt"
	"time"
)

// Staging is the one NodeStage of a volume on this host, shared by all its claims. How many
// claims use it is derived from the claims (ClaimStore.CountByVolume), never stored.
type Staging struct {
	VolumeID            string
	PluginID            string
	StagingPath         string
	NodeID              string // the plugin's node ID the volume was controller-published to
	PublishContext      map[string]string
	ControllerPublished bool
	Staged              bool
	// MountDev and MountRoot are what the topmost mount at StagingPath showed once
	// NodeStageVolume answered and was checked: its file system's device and its root within
	// it; MountIno and MountBirth the inode and birth time (unix nanoseconds, 0 when the file
	// system keeps none) of the directory the path showed (migration 0032). A claim joining the
	// staging compares them with what is there now. MountRoot empty: not known (an older
	// volctl's staging, or nothing mounted at the path).
	MountDev   uint64
	MountRoot  string
	MountIno   uint64
	MountBirth int64
	UpdatedAt  time.Time
}

// StagingStore reads and writes stagings.
type StagingStore interface {
	// Get returns a volume's staging, or an error matching ErrNotFound.
	Get(volumeID string) (Staging, error)
	// List returns every staging, ordered by volume ID.
	List() ([]Staging, error)
	// Put inserts or replaces a volume's staging and sets UpdatedAt; ErrConflict if the volume
	// does not exist.
	Put(st *Staging) error
	// Delete removes a volume's staging; ErrNotFound if there is none.
	Delete(volumeID string) error
	// Unclaimed returns, ordered, the IDs of the volumes with a staging and no claim: what a
	// forced detach or a release cut short left to undo (a plain detach undoes it, as
	// reconcile does).
	Unclaimed() ([]string, error)
}

// Stagings is the staging API inside this transaction.
func (tx *Tx) Stagings() StagingStore { return stagings{tx} }

type stagings struct{ tx *Tx }

const stagingColumns = `volume_id, plugin_id, staging_path, node_id, publish_context, controller_published, staged, mount_dev, mount_root, mount_ino, mount_birth, updated_at`

func scanStaging(sc scanner) (Staging, error) {
	var (
		st       Staging
		pctx     sql.NullString
		u        int64
		mountDev int64
		mountIno int64
	)
	if err := sc.Scan(&st.VolumeID, &st.PluginID, &st.StagingPath, &st.NodeID, &pctx, &st.ControllerPublished,
		&st.Staged, &mountDev, &st.MountRoot, &mountIno, &st.MountBirth, &u); err != nil {
		return Staging{}, err
	}
	if err := decJSON(pctx, &st.PublishContext); err != nil {
		return Staging{}, fmt.Errorf("staging of volume %q: decode: %w", st.VolumeID, err)
	}
	st.UpdatedAt, st.MountDev, st.MountIno = decTime(u), uint64(mountDev), uint64(mountIno)
	return st, nil
}

func stagingWhat(volumeID string) string { return fmt.Sprintf("staging of volume %q", volumeID) }

func (ss stagings) Get(volumeID string) (Staging, error) {
	return getOne(ss.tx, stagingWhat(volumeID), scanStaging,
		`SELECT `+stagingColumns+` FROM stagings WHERE volume_id = ?`, volumeID)
}

func (ss stagings) List() ([]Staging, error) {
	return listAll(ss.tx, "list stagings", scanStaging, `SELECT `+stagingColumns+` FROM stagings ORDER BY volume_id`)
}

func (ss stagings) Put(st *Staging) error {
	what := stagingWhat(st.VolumeID)
	pctx, err := encJSON(st.PublishContext)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", what, err)
	}
	now := ss.tx.now()
	_, err = ss.tx.exec(`INSERT OR REPLACE INTO stagings (`+stagingColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		st.VolumeID, st.PluginID, st.StagingPath, st.NodeID, pctx, encBool(st.ControllerPublished),
		encBool(st.Staged), int64(st.MountDev), st.MountRoot, int64(st.MountIno), st.MountBirth, encTime(now))
	if err != nil {
		return wrap(err, what, fmt.Sprintf("volume %q does not exist", st.VolumeID))
	}
	st.UpdatedAt = now
	return nil
}

func (ss stagings) Delete(volumeID string) error {
	res, err := ss.tx.exec(`DELETE FROM stagings WHERE volume_id = ?`, volumeID)
	return affected(res, err, stagingWhat(volumeID), "")
}

func (ss stagings) Unclaimed() ([]string, error) {
	return listAll(ss.tx, "list unclaimed stagings", func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	}, `SELECT volume_id FROM stagings s WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.volume_id = s.volume_id) ORDER BY volume_id`)
}
