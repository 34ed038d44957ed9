package store

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// ClaimState is a claim's checkpoint in the claim state machine (docs/architecture.md).
type ClaimState string

// The claim states: the publish path, then the release path.
const (
	ClaimTaken               ClaimState = "taken"
	ClaimControllerPublished ClaimState = "controller-published"
	ClaimNodeStaged          ClaimState = "node-staged"
	ClaimPublished           ClaimState = "published"
	ClaimUnpublishing        ClaimState = "unpublishing"
	ClaimNodeDetached        ClaimState = "node-detached"
	ClaimControllerDetached  ClaimState = "controller-detached"
)

// ClaimStates lists every claim state in lifecycle order.
var ClaimStates = []ClaimState{
	ClaimTaken, ClaimControllerPublished, ClaimNodeStaged, ClaimPublished,
	ClaimUnpublishing, ClaimNodeDetached, ClaimControllerDetached,
}

// IsPublishPath reports whether s is on the way to published (published included).
func (s ClaimState) IsPublishPath() bool {
	switch s {
	case ClaimTaken, ClaimControllerPublished, ClaimNodeStaged, ClaimPublished:
		return true
	}
	return false
}

// ClaimMode is whether a claim reads or writes.
type ClaimMode string

// The claim modes.
const (
	ClaimRead  ClaimMode = "read"
	ClaimWrite ClaimMode = "write"
)

// Claim is one alloc's live use of one volume.
type Claim struct {
	ID             int64 // assigned by Insert, never reused
	VolumeID       string
	Alloc          string
	Group          string // the group the alloc belongs to, "" if none
	Mode           ClaimMode
	AccessMode     spec.AccessMode
	AttachmentMode spec.AttachmentMode
	FSType         string          // merged mount options the claim was published with
	MountFlags     spec.MountFlags // likewise; redacted when printed
	State          ClaimState
	Releasing      bool // a release was asked for: the desired state is freed
	NeedsReconcile bool // a retryable failure was left for reconcile
	// Degraded: the claim was published and lost its mount, and its restore has not finished.
	// It is held whatever the plugin answers (never rolled back), re-driven by reconcile, and
	// freed only by an explicit release or detach. Cleared when it is published again.
	Degraded bool
	// Target is what is recorded of the claim's target: whether a NodePublishVolume of it may
	// have been sent, and whether what it made there was accepted (recorded published). A
	// release takes a link at an accepted target, or at one no publish was sent to, for one put
	// in its place, and leaves one at a target sent a publish and never accepted to the plugin
	// that made it (docs/architecture.md, Claim state machine).
	Target         TargetAcceptance
	TargetPath     string
	PublishContext map[string]string
	Binds          []spec.VolumeMount // the group's bind mounts of this volume, written by the engine
	// BindMounts is what the binds made: written alone (SetBindMounts), never by Update, and
	// not kept in the history; nil when nothing is recorded, or what is does not decode.
	BindMounts *BindMounts
	// TargetMount is what the target showed once its NodePublishVolume was accepted: written
	// alone (SetTargetMount), never by Update, and not kept in the history; nil when nothing is
	// recorded, or what is does not decode.
	TargetMount *TargetMount
	Attempts    int
	LastRPC     string
	LastCode    string // gRPC code name of the last failure, "" after a success
	LastError   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// BindMounts is the mount each of a claim's volume_mount binds made (or was found bound as, when
// the claim did not record it), by destination, in the boot named: a mount's ID is the kernel's
// for that boot only. Column bind_mounts (0029).
type BindMounts struct {
	Boot string `json:"boot"`
	// MountNS is the mount namespace the binds were made or found in (the inode of
	// /proc/self/ns/mnt): seen from another, sharing its mounts' peer groups, each mount is a
	// copy with an ID of its own.
	MountNS uint64               `json:"mntns"`
	At      map[string]BindMount `json:"at"`
}

// BindMount is one bind's mount: its ID in the mount table (reused once it is unmounted), and
// its unique ID (statx's STATX_MNT_ID_UNIQUE, Linux 6.8 on; 0 before), never reused in a boot.
type BindMount struct {
	ID     uint64 `json:"id"`
	Unique uint64 `json:"unique,omitempty"`
}

// TargetMount is what a claim's target showed once its NodePublishVolume was accepted, as a
// staging's Mount* fields record it: the topmost mount's file system (Dev) and root within it
// (Root), and the inode and birth time (unix nanoseconds, 0 where the file system keeps none) of
// the directory it shows. Column target_mount (0033).
type TargetMount struct {
	Dev   uint64 `json:"dev"`
	Root  string `json:"root"`
	Ino   uint64 `json:"ino"`
	Birth int64  `json:"birth,omitempty"`
}

// TargetAcceptance is what is recorded of a claim's target: whether a NodePublishVolume of it
// may have been sent (recorded in the commit made just before it is sent, kept until
// NodeUnpublishVolume answered and the target was found holding nothing), and whether it was accepted: checkTarget passed what
// NodePublishVolume made there as a mount, and the claim was recorded published.
type TargetAcceptance int8

// The target acceptances. Columns target_accepted (0011) and target_sent (0014): NULL and NULL,
// 0 and 1, 1 and 1, 0 and 0.
const (
	// TargetUnrecorded: a claim recorded by a volctl before schema version 11 (NULL), which
	// recorded nothing of it: its release decides from its state, as that volctl did.
	TargetUnrecorded TargetAcceptance = iota
	// TargetNotAccepted: a NodePublishVolume may have been sent, its answer not accepted (yet):
	// what is at the target is the plugin's.
	TargetNotAccepted
	// TargetAccepted: accepted, and recorded published; it stays so until the claim is freed, or
	// a restore sends NodePublishVolume again (TargetNotAccepted).
	TargetAccepted
	// TargetUnsent: no NodePublishVolume sent since the claim was taken, or since its target was
	// last unpublished (NodeUnpublishVolume answered and the target found holding nothing): what
	// is at the target is not the plugin's.
	TargetUnsent
)

// encTarget is a's column values: target_accepted (NULL for TargetUnrecorded, else 0 or 1) and
// target_sent (likewise NULL, 0 for TargetUnsent, else 1).
func encTarget(a TargetAcceptance) (accepted, sent any) {
	switch a {
	case TargetNotAccepted:
		return 0, 1
	case TargetAccepted:
		return 1, 1
	case TargetUnsent:
		return 0, 0
	}
	return nil, nil
}

// decTarget is encTarget undone. A target not accepted whose target_sent is not 0 (NULL: a
// history entry freed before version 14) may have been sent a publish: the safe side, where a
// link is the plugin's.
func decTarget(accepted, sent sql.NullInt64) TargetAcceptance {
	switch {
	case !accepted.Valid:
		return TargetUnrecorded
	case accepted.Int64 != 0:
		return TargetAccepted
	case sent.Valid && sent.Int64 == 0:
		return TargetUnsent
	}
	return TargetNotAccepted
}

// AtRest reports whether the claim is where it wants to be: published and not being released.
// Reconcile re-drives every claim that is not.
func (c Claim) AtRest() bool { return c.State == ClaimPublished && !c.Releasing && !c.NeedsReconcile }

// Outcome is how a claim ended.
type Outcome string

// The outcomes of a freed claim.
const (
	OutcomeReleased   Outcome = "released"    // released as asked
	OutcomeRolledBack Outcome = "rolled-back" // a final error on the publish path undid it
	OutcomeForced     Outcome = "forced"      // dropped by an operator without completing the release path
)

// PastClaim is a freed claim, as kept in the history.
type PastClaim struct {
	Claim
	HistoryID int64
	FreedAt   time.Time
	Outcome   Outcome
}

// ClaimStore reads and writes the live claims.
type ClaimStore interface {
	// Get returns the claim with an ID, or an error matching ErrNotFound.
	Get(id int64) (Claim, error)
	// Find returns an alloc's claim on a volume, or an error matching ErrNotFound.
	Find(volumeID, alloc string) (Claim, error)
	// ByVolume returns a volume's live claims, oldest first.
	ByVolume(volumeID string) ([]Claim, error)
	// CountByVolume counts a volume's live claims in the given states (all states if none given),
	// e.g. the claims still using its staging.
	CountByVolume(volumeID string, states ...ClaimState) (int, error)
	// ListAll returns every live claim, oldest first.
	ListAll() ([]Claim, error)
	// Claimed returns the IDs of the volumes with a live claim, in one read of the claims'
	// (volume, alloc) index.
	Claimed() (map[string]bool, error)
	// WithBinds returns the live claims with volume_mounts, oldest first.
	WithBinds() ([]Claim, error)
	// Insert adds a claim and sets its ID and times. If it is the volume's only live claim, it
	// also sets the volume's current access and attachment mode. ErrConflict if the alloc
	// already claims the volume or the volume does not exist.
	Insert(c *Claim) error
	// Update replaces every field of an existing claim but its ID, volume, alloc and creation
	// time, and sets UpdatedAt.
	Update(c *Claim) error
	// SetBindMounts records what a claim's binds made (nil: nothing recorded), and nothing else.
	SetBindMounts(id int64, m *BindMounts) error
	// SetTargetMount records what a claim's target showed once published (nil: nothing
	// recorded), and nothing else.
	SetTargetMount(id int64, m *TargetMount) error
	// Free moves a claim to the history with an outcome, and clears the volume's current modes
	// if it was the last live claim.
	Free(id int64, outcome Outcome) error
}

// Claims is the live-claim API inside this transaction.
func (tx *Tx) Claims() ClaimStore { return claims{tx} }

type claims struct{ tx *Tx }

// claimBody is every claim column but the id, shared by claims and claim_history.
const claimBody = `volume_id, alloc, group_name, mode, access_mode, attachment_mode, fs_type, mount_flags,
	state, releasing, needs_reconcile, target_path, publish_context, binds, attempts, last_rpc, last_code,
	last_error, degraded, target_accepted, target_sent, created_at, updated_at`

const claimColumns = `id, ` + claimBody + `, bind_mounts, target_mount`

func claimTargets(c *Claim, flags, pctx, binds *sql.NullString, target *[2]sql.NullInt64, created, updated *int64) []any {
	return []any{&c.VolumeID, &c.Alloc, &c.Group, &c.Mode, &c.AccessMode, &c.AttachmentMode, &c.FSType, flags,
		&c.State, &c.Releasing, &c.NeedsReconcile, &c.TargetPath, pctx, binds, &c.Attempts, &c.LastRPC, &c.LastCode,
		&c.LastError, &c.Degraded, &target[0], &target[1], created, updated}
}

func decodeClaim(c *Claim, flags, pctx, binds sql.NullString, target [2]sql.NullInt64, created, updated int64) error {
	c.Target = decTarget(target[0], target[1])
	var raw []string
	if err := decJSONs(jsonCol{flags, &raw}, jsonCol{pctx, &c.PublishContext}, jsonCol{binds, &c.Binds}); err != nil {
		return fmt.Errorf("claim %d: decode: %w", c.ID, err)
	}
	c.MountFlags = spec.MountFlags(raw)
	c.CreatedAt, c.UpdatedAt = decTime(created), decTime(updated)
	return nil
}

func scanClaim(sc scanner) (Claim, error) {
	var (
		c                          Claim
		flags, pctx, binds, mounts sql.NullString
		targetMount                sql.NullString
		target                     [2]sql.NullInt64
		created, updated           int64
	)
	if err := sc.Scan(append(append([]any{&c.ID}, claimTargets(&c, &flags, &pctx, &binds, &target, &created, &updated)...), &mounts, &targetMount)...); err != nil {
		return Claim{}, err
	}
	if err := decodeClaim(&c, flags, pctx, binds, target, created, updated); err != nil {
		return c, err
	}
	// Only a record of what the binds made, which the engine does without for a claim an older
	// volctl recorded: one that does not decode (damaged, edited, another build's) is none. As
	// an error it failed every read of the volume's claims, and of every claim: the claim could
	// not be released, nor any reconcile pass run, the bind left mounted for good
	// (TestUndecodableBindRecordDoesNotMakeAClaimUnreleasable).
	if err := decJSON(mounts, &c.BindMounts); err != nil {
		c.BindMounts = nil
	}
	if err := decJSON(targetMount, &c.TargetMount); err != nil {
		c.TargetMount = nil // not known: the target is not compared
	}
	return c, nil
}

// claimMutable are the columns Update rewrites, and claimMutableArgs their values.
const claimMutable = `group_name = ?, mode = ?, access_mode = ?, attachment_mode = ?, fs_type = ?, mount_flags = ?,
	state = ?, releasing = ?, needs_reconcile = ?, target_path = ?, publish_context = ?, binds = ?, attempts = ?,
	last_rpc = ?, last_code = ?, last_error = ?, degraded = ?, target_accepted = ?, target_sent = ?`

func claimMutableArgs(c *Claim) ([]any, error) {
	var cols [3]any
	for i, v := range []any{c.MountFlags.Plain(), c.PublishContext, c.Binds} {
		var err error
		if cols[i], err = encJSON(v); err != nil {
			return nil, fmt.Errorf("%s: encode: %w", claimWhat(c), err)
		}
	}
	accepted, sent := encTarget(c.Target)
	return []any{c.Group, c.Mode, c.AccessMode, c.AttachmentMode, c.FSType, cols[0],
		c.State, encBool(c.Releasing), encBool(c.NeedsReconcile), c.TargetPath, cols[1], cols[2], c.Attempts,
		c.LastRPC, c.LastCode, spec.Cut(c.LastError, MaxStoredMessage), encBool(c.Degraded), accepted, sent}, nil
}

func claimWhat(c *Claim) string {
	return fmt.Sprintf("claim on volume %q for alloc %q", c.VolumeID, c.Alloc)
}

func (cs claims) Get(id int64) (Claim, error) {
	return getOne(cs.tx, fmt.Sprintf("claim %d", id), scanClaim, `SELECT `+claimColumns+` FROM claims WHERE id = ?`, id)
}

func (cs claims) Find(volumeID, alloc string) (Claim, error) {
	return getOne(cs.tx, fmt.Sprintf("claim on volume %q for alloc %q", volumeID, alloc), scanClaim,
		`SELECT `+claimColumns+` FROM claims WHERE volume_id = ? AND alloc = ?`, volumeID, alloc)
}

func (cs claims) list(what, where string, args ...any) ([]Claim, error) {
	return listAll(cs.tx, what, scanClaim, `SELECT `+claimColumns+` FROM claims `+where+` ORDER BY id`, args...)
}

func (cs claims) ByVolume(volumeID string) ([]Claim, error) {
	return cs.list(fmt.Sprintf("claims on volume %q", volumeID), `WHERE volume_id = ?`, volumeID)
}

func (cs claims) ListAll() ([]Claim, error) { return cs.list("list claims", "") }

func (cs claims) WithBinds() ([]Claim, error) {
	return cs.list("list claims with volume_mounts", `WHERE binds IS NOT NULL AND binds != '[]'`)
}

func (cs claims) Claimed() (map[string]bool, error) {
	ids, err := listAll(cs.tx, "list claimed volumes", func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	}, `SELECT DISTINCT volume_id FROM claims`)
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

func (cs claims) CountByVolume(volumeID string, states ...ClaimState) (int, error) {
	q := `SELECT count(*) FROM claims WHERE volume_id = ?`
	args := []any{volumeID}
	if len(states) > 0 {
		q += ` AND state IN (?` + strings.Repeat(", ?", len(states)-1) + `)`
		for _, s := range states {
			args = append(args, s)
		}
	}
	var n int
	if err := cs.tx.queryRow(q, args...).Scan(&n); err != nil {
		return 0, wrap(err, fmt.Sprintf("count claims on volume %q", volumeID), "")
	}
	return n, nil
}

func (cs claims) Insert(c *Claim) error {
	what := claimWhat(c)
	args, err := claimMutableArgs(c)
	if err != nil {
		return err
	}
	now := encTime(cs.tx.now())
	err = cs.tx.queryRow(`INSERT INTO claims (`+claimBody+`) VALUES (?, ?, `+
		strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")+`, ?, ?) RETURNING id`,
		append(append([]any{c.VolumeID, c.Alloc}, args...), now, now)...).Scan(&c.ID)
	if err != nil {
		return wrap(err, what, fmt.Sprintf("volume %q does not exist", c.VolumeID))
	}
	c.CreatedAt, c.UpdatedAt = decTime(now), decTime(now)
	// The first live claim fixes the volume's modes (docs/architecture.md, Modes); doing it here keeps the
	// volume row and its claims consistent whatever the caller forgets.
	_, err = cs.tx.exec(`
		UPDATE volumes SET access_mode = ?, attachment_mode = ?, updated_at = ?
		WHERE id = ? AND NOT EXISTS (SELECT 1 FROM claims WHERE volume_id = ? AND id != ?)`,
		c.AccessMode, c.AttachmentMode, now, c.VolumeID, c.VolumeID, c.ID)
	return wrap(err, what, "")
}

func (cs claims) Update(c *Claim) error {
	what := claimWhat(c)
	args, err := claimMutableArgs(c)
	if err != nil {
		return err
	}
	now := cs.tx.now()
	res, err := cs.tx.exec(`UPDATE claims SET `+claimMutable+`, updated_at = ? WHERE id = ?`,
		append(args, encTime(now), c.ID)...)
	if err := affected(res, err, what, ""); err != nil {
		return err
	}
	c.UpdatedAt = now
	return nil
}

func (cs claims) SetBindMounts(id int64, m *BindMounts) error {
	what := fmt.Sprintf("claim %d: record its binds' mounts", id)
	col, err := encJSON(m)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", what, err)
	}
	res, err := cs.tx.exec(`UPDATE claims SET bind_mounts = ? WHERE id = ?`, col, id)
	return affected(res, err, what, "")
}

func (cs claims) SetTargetMount(id int64, m *TargetMount) error {
	what := fmt.Sprintf("claim %d: record what its target shows", id)
	col, err := encJSON(m)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", what, err)
	}
	res, err := cs.tx.exec(`UPDATE claims SET target_mount = ? WHERE id = ?`, col, id)
	return affected(res, err, what, "")
}

func (cs claims) Free(id int64, outcome Outcome) error {
	what := fmt.Sprintf("free claim %d", id)
	var (
		volumeID  string
		historyID int64
	)
	now := encTime(cs.tx.now())
	err := cs.tx.queryRow(`
		INSERT INTO claim_history (claim_id, `+claimBody+`, freed_at, outcome)
		SELECT id, `+claimBody+`, ?, ? FROM claims WHERE id = ?
		RETURNING id, volume_id`, now, outcome, id).Scan(&historyID, &volumeID)
	if err != nil {
		return wrap(err, what, "")
	}
	if _, err := cs.tx.exec(`DELETE FROM claims WHERE id = ?`, id); err != nil {
		return wrap(err, what, "")
	}
	if _, err := cs.tx.exec(`
		UPDATE volumes SET access_mode = '', attachment_mode = '', updated_at = ?
		WHERE id = ? AND NOT EXISTS (SELECT 1 FROM claims WHERE volume_id = ?)`, now, volumeID, volumeID); err != nil {
		return wrap(err, what, "")
	}
	// Keep the newest historyLimit entries. Ids are dense (AUTOINCREMENT, rows are only ever
	// deleted from the old end), so this is a range delete on the primary key, and nothing to do
	// until the history first fills. The entries pruned may hold the last copy of a mount flag
	// (a password): that is secrets leaving the state, as a delete is (noteSecretsUnlessSame,
	// forget.go), so the event log is scrubbed of them and the WAL's wipe owed
	// (TestPrunedClaimHistoryLeavesTheFiles). Entries without flags cost one indexed read; so do
	// entries whose flags a kept entry or a live claim holds too (the newest entry, just written,
	// most often: every claim of a job asks the same), or whose every flag is one volume status
	// shows, no secret (spec.ShownMountFlag): those leave no secret, and pay no comparison of
	// every secret the state holds (prunedSecrets; BenchmarkFreeWithFullHistory).
	if over := historyID - int64(cs.tx.s.historyLimit); over > 0 {
		if err := cs.prunedSecrets(over); err != nil {
			return wrap(err, what, "")
		}
		_, err = cs.tx.exec(`DELETE FROM claim_history WHERE id <= ?`, over)
	}
	return wrap(err, what, "")
}

// prunedSecrets notes the secrets (noteSecrets) before the claim history's entries up to id over
// are deleted when one of them holds a mount flag that may be a secret's last copy: a flag not
// shown by volume status, in a list no kept entry and no live claim holds whole.
func (cs claims) prunedSecrets(over int64) error {
	if cs.tx.s.forget == nil || cs.tx.noted {
		return nil
	}
	rows, err := cs.tx.query(`
		SELECT DISTINCT h.mount_flags FROM claim_history h
		WHERE h.id <= ? AND h.mount_flags IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM claim_history k WHERE k.id > ? AND k.mount_flags = h.mount_flags)
		AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.mount_flags = h.mount_flags)`, over, over)
	lists, err := collect(rows, err, func(sc scanner) (sql.NullString, error) {
		var col sql.NullString
		return col, sc.Scan(&col)
	})
	if err != nil {
		return fmt.Errorf("read the pruned claims' mount flags: %w", mapBusy(err))
	}
	for _, col := range lists {
		var flags []string
		if err := decJSON(col, &flags); err != nil || slices.ContainsFunc(flags, func(f string) bool { return !spec.ShownMountFlag(f) }) {
			return cs.tx.noteSecrets() // undecodable: counted as a secret
		}
	}
	return nil
}

const pastClaimColumns = `id, claim_id, ` + claimBody + `, freed_at, outcome`

func scanPastClaim(sc scanner) (PastClaim, error) {
	var (
		p                  PastClaim
		flags, pctx, binds sql.NullString
		target             [2]sql.NullInt64
		created, updated   int64
		freed              int64
	)
	targets := append([]any{&p.HistoryID, &p.ID}, claimTargets(&p.Claim, &flags, &pctx, &binds, &target, &created, &updated)...)
	if err := sc.Scan(append(targets, &freed, &p.Outcome)...); err != nil {
		return PastClaim{}, err
	}
	p.FreedAt = decTime(freed)
	return p, decodeClaim(&p.Claim, flags, pctx, binds, target, created, updated)
}

// History returns up to limit freed claims, newest first (limit <= 0: all); only volumeID's
// when it is set. The history keeps the newest entries up to a limit (DefaultHistoryLimit).
// No command lists freed claims: the tests of the store, the engine and volctl read what a
// release or a rollback left with it.
func (tx *Tx) History(volumeID string, limit int) ([]PastClaim, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	if volumeID == "" {
		return listAll(tx, "claim history", scanPastClaim, `SELECT `+pastClaimColumns+` FROM claim_history ORDER BY id DESC LIMIT ?`, limit)
	}
	return listAll(tx, fmt.Sprintf("claim history of volume %q", volumeID), scanPastClaim,
		`SELECT `+pastClaimColumns+` FROM claim_history WHERE volume_id = ? ORDER BY id DESC LIMIT ?`, volumeID, limit)
}
