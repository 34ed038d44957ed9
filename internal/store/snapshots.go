package store

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/spec"
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
	// What deleting it needs once the source volume or the plugin's record is gone: the secrets
	// it was created with, and how its plugin's controller was reached.
	Secrets spec.Secrets
	Reach   PluginReach
}

// PluginReach is how a plugin was reached: its type and sockets, as declared when a snapshot
// was made (empty for a snapshot volctl did not create).
type PluginReach struct {
	Type             spec.PluginType
	Socket           string
	ControllerSocket string
	Provider         string // the driver name GetPluginInfo gave, which must answer there again
}

// SnapshotCreate is the intent of a CreateSnapshot, recorded before it is sent and keyed by
// the CSI name (the provider's ID is not known until it answers).
type SnapshotCreate struct {
	PluginID         string
	Name             string
	SourceVolumeID   string
	SourceExternalID string
	Parameters       map[string]string
	Secrets          spec.Secrets
	Reach            PluginReach
	CreatedAt        time.Time
}

// SnapshotStore reads and writes snapshots.
type SnapshotStore interface {
	// Get returns one snapshot, or an error matching ErrNotFound.
	Get(pluginID, snapshotID string) (Snapshot, error)
	// List returns the snapshots of a plugin ("" for all), ordered by plugin and snapshot ID.
	List(pluginID string) ([]Snapshot, error)
	// Near returns, ordered by plugin and snapshot ID, the snapshots of every plugin whose ID
	// may be snapshotID spelled otherwise, or is it (engine's nearSnapshot, which decides by
	// spec.SameStorageID and the plugin): those whose stored key (snapshot_key) is
	// snapshotID's, through its index, and any whose key was stored by a volctl with other
	// Unicode tables or by hand.
	Near(snapshotID string) ([]Snapshot, error)
	// Put inserts or replaces a snapshot; a zero CreatedAt is stamped with the current time.
	Put(sn *Snapshot) error
	// Delete removes a snapshot; ErrNotFound if there is none.
	Delete(pluginID, snapshotID string) error
	// NameTaken reports whether a plugin has a snapshot or a snapshot intent with this name.
	NameTaken(pluginID, name string) (bool, error)
	// Keys returns the key of every snapshot recorded or whose delete is recorded, each once.
	Keys() ([]SnapshotKey, error)

	// PutCreate inserts or replaces a snapshot intent; a zero CreatedAt is stamped now.
	PutCreate(sc *SnapshotCreate) error
	// GetCreate returns one intent, or an error matching ErrNotFound.
	GetCreate(pluginID, name string) (SnapshotCreate, error)
	// ListCreates returns the intents of a plugin ("" for all), ordered by plugin and name.
	ListCreates(pluginID string) ([]SnapshotCreate, error)
	// DeleteCreate removes an intent; ErrNotFound if there is none.
	DeleteCreate(pluginID, name string) error

	// MarkDeleting records that a snapshot's delete is under way (whether volctl records the
	// snapshot or not), before its DeleteSnapshot is sent; marking it again is no change, and
	// already says it was (an earlier delete's, unanswered or killed, may have deleted it).
	MarkDeleting(pluginID, snapshotID string) (already bool, err error)
	// Deleting reports whether a snapshot's delete is recorded (MarkDeleting).
	Deleting(pluginID, snapshotID string) (bool, error)
	// ListDeleting lists the recorded snapshot deletes, by plugin and ID.
	ListDeleting() ([]SnapshotDelete, error)
	// Undelete forgets a snapshot's recorded delete; none recorded is no error.
	Undelete(pluginID, snapshotID string) error
}

// Snapshots is the snapshot API inside this transaction.
func (tx *Tx) Snapshots() SnapshotStore { return snapshots{tx} }

type snapshots struct{ tx *Tx }

const snapshotColumns = `plugin_id, snapshot_id, name, source_volume_id, source_external_id, size_bytes,
	ready_to_use, parameters, created_at, secrets, plugin_type, socket, controller_socket, provider`

func scanSnapshot(sc scanner) (Snapshot, error) {
	var (
		sn          Snapshot
		params, sec sql.NullString
		c           int64
	)
	if err := sc.Scan(&sn.PluginID, &sn.SnapshotID, &sn.Name, &sn.SourceVolumeID, &sn.SourceExternalID,
		&sn.SizeBytes, &sn.ReadyToUse, &params, &c, &sec, &sn.Reach.Type, &sn.Reach.Socket, &sn.Reach.ControllerSocket, &sn.Reach.Provider); err != nil {
		return Snapshot{}, err
	}
	if err := decJSONs(jsonCol{params, &sn.Parameters}, jsonCol{sec, &sn.Secrets}); err != nil {
		return Snapshot{}, fmt.Errorf("%s: decode: %w", snapshotWhat(sn.PluginID, sn.SnapshotID), err)
	}
	sn.CreatedAt = decTime(c)
	return sn, nil
}

// encParamsSecrets encodes the parameters and secrets that snapshots and snapshot intents share,
// and stamps a zero *created with the current time, as it will read back.
func (ss snapshots) encParamsSecrets(what string, params map[string]string, secrets spec.Secrets,
	created *time.Time) (paramsCol, secretsCol any, err error) {
	if paramsCol, err = encJSON(params); err != nil {
		return nil, nil, fmt.Errorf("%s: encode: %w", what, err)
	}
	if secretsCol, err = encJSON(secrets.Plain()); err != nil {
		return nil, nil, fmt.Errorf("%s: encode: %w", what, err)
	}
	if _, ok := StoredTime(*created); !ok {
		// A plugin's creation_time outside what the store holds (a lie: the year 3000), or
		// the epoch itself, which the store holds as "none", is recorded as a plugin's missing
		// one is: the time volctl recorded the snapshot.
		*created = ss.tx.now()
	}
	*created = decTime(encTime(*created))
	return paramsCol, secretsCol, nil
}

// StoredTime is t as the store keeps it (to the nanosecond), and whether it can: not the zero
// time, the epoch (stored as "none") or one outside what int64 nanoseconds hold (a plugin's lie:
// the year 3000). A snapshot dated so is recorded with the time volctl recorded it.
func StoredTime(t time.Time) (time.Time, bool) {
	if t.IsZero() || !storableTime(t) || encTime(t) == 0 {
		return time.Time{}, false
	}
	return decTime(encTime(t)), true
}

func snapshotWhat(pluginID, snapshotID string) string {
	return fmt.Sprintf("snapshot %q of plugin %q", snapshotID, pluginID)
}

func (ss snapshots) Get(pluginID, snapshotID string) (Snapshot, error) {
	return getOne(ss.tx, snapshotWhat(pluginID, snapshotID), scanSnapshot,
		`SELECT `+snapshotColumns+` FROM snapshots WHERE plugin_id = ? AND snapshot_id = ?`, pluginID, snapshotID)
}

func (ss snapshots) List(pluginID string) ([]Snapshot, error) {
	return listAll(ss.tx, "list snapshots", scanSnapshot, `SELECT `+snapshotColumns+` FROM snapshots WHERE ? = '' OR plugin_id = ?
		ORDER BY plugin_id, snapshot_id`, pluginID, pluginID)
}

// nearSnapshotsQuery is Near's query, around nearKeyWhere's condition.
const nearSnapshotsQuery = `SELECT ` + snapshotColumns + ` FROM snapshots WHERE %s`

func (ss snapshots) Near(snapshotID string) ([]Snapshot, error) {
	where, args := nearKeyWhere("snapshot_key", storageKey(snapshotID))
	// Sorted here, as NearExternalIDs sorts, to keep SQLite on the key's index.
	out, err := listAll(ss.tx, fmt.Sprintf("list snapshots near %q", spec.Cut(snapshotID, 256)), scanSnapshot,
		fmt.Sprintf(nearSnapshotsQuery, where), args...)
	slices.SortFunc(out, func(a, b Snapshot) int {
		return cmp.Or(strings.Compare(a.PluginID, b.PluginID), strings.Compare(a.SnapshotID, b.SnapshotID))
	})
	return out, err
}

func (ss snapshots) Put(sn *Snapshot) error {
	what := snapshotWhat(sn.PluginID, sn.SnapshotID)
	params, sec, err := ss.encParamsSecrets(what, sn.Parameters, sn.Secrets, &sn.CreatedAt)
	if err != nil {
		return err
	}
	if err := ss.tx.noteSecretsUnlessSame(`SELECT secrets IS ? FROM snapshots WHERE plugin_id = ? AND snapshot_id = ?`, sec, sn.PluginID, sn.SnapshotID); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	keyCol, keyArg := ss.tx.keyColumn("snapshot_key", sn.SnapshotID)
	_, err = ss.tx.exec(`INSERT OR REPLACE INTO snapshots (`+snapshotColumns+keyCol+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`+strings.Repeat(", ?", len(keyArg))+`)`,
		append([]any{sn.PluginID, sn.SnapshotID, sn.Name, sn.SourceVolumeID, sn.SourceExternalID, sn.SizeBytes,
			encBool(sn.ReadyToUse), params, encTime(sn.CreatedAt), sec, sn.Reach.Type, sn.Reach.Socket, sn.Reach.ControllerSocket, sn.Reach.Provider},
			keyArg...)...)
	return wrap(err, what, "")
}

func (ss snapshots) Delete(pluginID, snapshotID string) error {
	if err := ss.tx.noteSecrets(); err != nil {
		return fmt.Errorf("%s: %w", snapshotWhat(pluginID, snapshotID), err)
	}
	res, err := ss.tx.exec(`DELETE FROM snapshots WHERE plugin_id = ? AND snapshot_id = ?`, pluginID, snapshotID)
	return affected(res, err, snapshotWhat(pluginID, snapshotID), "")
}

func (ss snapshots) NameTaken(pluginID, name string) (bool, error) {
	var n int
	err := ss.tx.queryRow(`SELECT (SELECT count(*) FROM snapshots WHERE plugin_id = ? AND name = ?)
		+ (SELECT count(*) FROM snapshot_creates WHERE plugin_id = ? AND name = ?)`, pluginID, name, pluginID, name).Scan(&n)
	if err != nil {
		return false, wrap(err, fmt.Sprintf("snapshot name %q of plugin %q", name, pluginID), "")
	}
	return n > 0, nil
}

const snapshotCreateColumns = `plugin_id, name, source_volume_id, source_external_id, parameters, secrets,
	plugin_type, socket, controller_socket, provider, created_at`

func snapshotCreateWhat(pluginID, name string) string {
	return fmt.Sprintf("snapshot intent %q of plugin %q", name, pluginID)
}

func scanSnapshotCreate(sc scanner) (SnapshotCreate, error) {
	var (
		s           SnapshotCreate
		params, sec sql.NullString
		c           int64
	)
	if err := sc.Scan(&s.PluginID, &s.Name, &s.SourceVolumeID, &s.SourceExternalID, &params, &sec,
		&s.Reach.Type, &s.Reach.Socket, &s.Reach.ControllerSocket, &s.Reach.Provider, &c); err != nil {
		return SnapshotCreate{}, err
	}
	if err := decJSONs(jsonCol{params, &s.Parameters}, jsonCol{sec, &s.Secrets}); err != nil {
		return SnapshotCreate{}, fmt.Errorf("%s: decode: %w", snapshotCreateWhat(s.PluginID, s.Name), err)
	}
	s.CreatedAt = decTime(c)
	return s, nil
}

func (ss snapshots) PutCreate(sc *SnapshotCreate) error {
	what := snapshotCreateWhat(sc.PluginID, sc.Name)
	params, sec, err := ss.encParamsSecrets(what, sc.Parameters, sc.Secrets, &sc.CreatedAt)
	if err != nil {
		return err
	}
	if err := ss.tx.noteSecretsUnlessSame(`SELECT secrets IS ? FROM snapshot_creates WHERE plugin_id = ? AND name = ?`, sec, sc.PluginID, sc.Name); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	_, err = ss.tx.exec(`INSERT OR REPLACE INTO snapshot_creates (`+snapshotCreateColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sc.PluginID, sc.Name, sc.SourceVolumeID, sc.SourceExternalID, params, sec, sc.Reach.Type, sc.Reach.Socket,
		sc.Reach.ControllerSocket, sc.Reach.Provider, encTime(sc.CreatedAt))
	return wrap(err, what, "")
}

func (ss snapshots) GetCreate(pluginID, name string) (SnapshotCreate, error) {
	return getOne(ss.tx, snapshotCreateWhat(pluginID, name), scanSnapshotCreate,
		`SELECT `+snapshotCreateColumns+` FROM snapshot_creates WHERE plugin_id = ? AND name = ?`, pluginID, name)
}

func (ss snapshots) ListCreates(pluginID string) ([]SnapshotCreate, error) {
	return listAll(ss.tx, "list snapshot intents", scanSnapshotCreate, `SELECT `+snapshotCreateColumns+` FROM snapshot_creates
		WHERE ? = '' OR plugin_id = ? ORDER BY plugin_id, name`, pluginID, pluginID)
}

func (ss snapshots) DeleteCreate(pluginID, name string) error {
	if err := ss.tx.noteSecrets(); err != nil {
		return fmt.Errorf("%s: %w", snapshotCreateWhat(pluginID, name), err)
	}
	res, err := ss.tx.exec(`DELETE FROM snapshot_creates WHERE plugin_id = ? AND name = ?`, pluginID, name)
	return affected(res, err, snapshotCreateWhat(pluginID, name), "")
}

func (ss snapshots) MarkDeleting(pluginID, snapshotID string) (bool, error) {
	what := "the delete of " + snapshotWhat(pluginID, snapshotID)
	res, err := ss.tx.exec(`INSERT INTO snapshot_deletes (plugin_id, snapshot_id, created_at) VALUES (?, ?, ?)
		ON CONFLICT (plugin_id, snapshot_id) DO NOTHING`, pluginID, snapshotID, encTime(ss.tx.now()))
	if err != nil {
		return false, wrap(err, what, "")
	}
	n, err := res.RowsAffected()
	return n == 0, wrap(err, what, "")
}

func (ss snapshots) Deleting(pluginID, snapshotID string) (bool, error) {
	var n int
	err := ss.tx.queryRow(`SELECT count(*) FROM snapshot_deletes WHERE plugin_id = ? AND snapshot_id = ?`, pluginID, snapshotID).Scan(&n)
	if err != nil {
		return false, wrap(err, "the delete of "+snapshotWhat(pluginID, snapshotID), "")
	}
	return n > 0, nil
}

// SnapshotDelete is a recorded snapshot delete (MarkDeleting): the snapshot's plugin and ID,
// and when the delete was recorded.
type SnapshotDelete struct {
	PluginID   string
	SnapshotID string
	CreatedAt  time.Time
}

func (ss snapshots) ListDeleting() ([]SnapshotDelete, error) {
	return listAll(ss.tx, "list snapshot deletes", func(sc scanner) (SnapshotDelete, error) {
		var (
			d SnapshotDelete
			c int64
		)
		err := sc.Scan(&d.PluginID, &d.SnapshotID, &c)
		d.CreatedAt = decTime(c)
		return d, err
	}, `SELECT plugin_id, snapshot_id, created_at FROM snapshot_deletes ORDER BY plugin_id, snapshot_id`)
}

// SnapshotKey is one snapshot's key: its plugin and its ID.
type SnapshotKey struct{ PluginID, SnapshotID string }

// Keys is the key of every snapshot the state names: those recorded and those whose delete is
// recorded (ListDeleting), which may no longer be; each once, nothing else read.
func (ss snapshots) Keys() ([]SnapshotKey, error) {
	return listAll(ss.tx, "list snapshot IDs", func(sc scanner) (SnapshotKey, error) {
		var k SnapshotKey
		return k, sc.Scan(&k.PluginID, &k.SnapshotID)
	}, `SELECT plugin_id, snapshot_id FROM snapshots UNION SELECT plugin_id, snapshot_id FROM snapshot_deletes`)
}

func (ss snapshots) Undelete(pluginID, snapshotID string) error {
	_, err := ss.tx.exec(`DELETE FROM snapshot_deletes WHERE plugin_id = ? AND snapshot_id = ?`, pluginID, snapshotID)
	return wrap(err, "the delete of "+snapshotWhat(pluginID, snapshotID), "")
}
