package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// VolumeState is where a volume is in its own lifecycle (not a claim's).
type VolumeState string

// The volume states. A volume is inserted as creating before CreateVolume is sent, so a crash
// mid-create leaves a row reconcile can find; it is deleting from before DeleteVolume is sent.
const (
	VolumeCreating VolumeState = "creating"
	VolumeReady    VolumeState = "ready"
	VolumeDeleting VolumeState = "deleting"
)

// Volume is a registered or created CSI volume.
type Volume struct {
	ID                 string
	Namespace          string
	Name               string
	PluginID           string
	ExternalID         string // the provider's volume ID, sent in every RPC
	CSIName            string // the name sent to CreateVolume, its idempotency key
	State              VolumeState
	Capabilities       []spec.Capability
	MountOptions       *spec.MountOptions
	Secrets            spec.Secrets
	Parameters         map[string]string
	Context            map[string]string
	TopologyRequest    *spec.TopologyRequest
	AccessibleTopology []spec.Topology
	CapacityBytes      int64
	RequestedMin       int64
	RequestedMax       int64
	SnapshotID         string
	CloneID            string // the source's storage ID, the clone_id sent to CreateVolume
	// CloneSpec is the clone_id as the create's spec wrote it (a volctl volume ID, or the
	// provider's volume ID), which the same spec created again is compared with once that
	// volume is gone; "" when the volume is not a clone, or an older volctl created it. Insert
	// writes it; Update leaves it alone (a created volume keeps its source).
	CloneSpec      string
	AccessMode     spec.AccessMode     // fixed by the first live claim, "" when there is none
	AttachmentMode spec.AttachmentMode // likewise
	// NodeExpandMin and NodeExpandMax are a NodeExpandVolume owed to this node (the controller
	// said node_expansion_required, or only the node expands) and not yet done: the capacity
	// range to send. 0 when none is owed.
	NodeExpandMin int64
	NodeExpandMax int64
	// NodeExpandControllerDone says the controller has had NodeExpandMin: ControllerExpandVolume
	// answered at that size or more, so only the NodeExpandVolume is owed (migration 0017).
	// False for a node-only expansion's debt (NodeExpandVolume is the whole expansion, unless
	// the plugin has since declared the controller's EXPAND_VOLUME) and for a debt recorded
	// before the mark. Update writes it; SetNodeExpansion clears it.
	NodeExpandControllerDone bool
	// NodeExpandGuessed says the node expansion owed is volctl's guess, not the plugin's word:
	// owed after a lost ControllerExpandVolume answer while the node half could not be asked
	// (migration 0028), let go once the node half turns out to have no EXPAND_VOLUME. Written
	// as NodeExpandControllerDone is: by Update, only with a debt; SetNodeExpansion clears it.
	NodeExpandGuessed bool
	// NodeOnlyFrom is the size the volume was recorded at before its node-only debt
	// (NodeExpandMin, NodeExpandControllerDone false: the NodeExpandVolume is the whole
	// expansion) was recorded, which a refusal for good of that step at a later publish or
	// reconcile puts back (migration 0034). nil when not known: no debt, one recorded by an
	// older volctl, or one the engine did not record it for. Written by Update and Insert with
	// a debt only; SetNodeExpansion clears it.
	NodeOnlyFrom *SizeRecord
	// ExpandMin and ExpandMax are the capacity range of a ControllerExpandVolume recorded
	// before it was sent and whose answer is not recorded yet (SetExpansionIntent): the
	// storage may be that size already. 0 when none is pending. Read only: Insert and Update
	// leave them alone.
	ExpandMin int64
	ExpandMax int64
	// ExpandBeneathMin and ExpandBeneathMax are an earlier pending expansion that the one in
	// ExpandMin was written over (migration 0031): its answer was lost too, and it is put back
	// where the one over it is refused. 0 when none. Read only, as ExpandMin is.
	ExpandBeneathMin int64
	ExpandBeneathMax int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// SizeRecord is a volume's size as recorded: what the plugin reported, and what was asked.
type SizeRecord struct {
	CapacityBytes int64
	RequestedMin  int64
}

// nodeOnlyFromArgs are the node_only_from columns' values for v: NULL without a debt or a size.
func nodeOnlyFromArgs(v *Volume) (capacity, min any) {
	if v.NodeExpandMin <= 0 || v.NodeOnlyFrom == nil {
		return nil, nil
	}
	return v.NodeOnlyFrom.CapacityBytes, v.NodeOnlyFrom.RequestedMin
}

// VolumeFromSpec is a Volume with the fields a volume spec gives; the caller sets State and what
// the plugin returns (ExternalID for a created volume, capacity, topology).
func VolumeFromSpec(v spec.Volume) Volume {
	return Volume{
		ID: v.ID, Namespace: v.Namespace, Name: v.Name, PluginID: v.PluginID, ExternalID: v.ExternalID,
		Capabilities: v.Capabilities, MountOptions: v.MountOptions, Secrets: v.Secrets,
		Parameters: v.Parameters, Context: v.Context, TopologyRequest: v.TopologyRequest,
		RequestedMin: v.CapacityMin, RequestedMax: v.CapacityMax, SnapshotID: v.SnapshotID, CloneID: v.CloneID,
	}
}

// Spec is the volume as a volume spec, e.g. to compare a re-submitted spec with what is stored.
func (v Volume) Spec() spec.Volume {
	return spec.Volume{
		ID: v.ID, Namespace: v.Namespace, Name: v.Name, Type: "csi", PluginID: v.PluginID, ExternalID: v.ExternalID,
		SnapshotID: v.SnapshotID, CloneID: v.CloneID, CapacityMin: v.RequestedMin, CapacityMax: v.RequestedMax,
		Capabilities: v.Capabilities, MountOptions: v.MountOptions, TopologyRequest: v.TopologyRequest,
		Secrets: v.Secrets, Parameters: v.Parameters, Context: v.Context,
	}
}

// VolumeFilter narrows List; empty fields match everything.
type VolumeFilter struct {
	Namespace  string
	PluginID   string
	ExternalID string
	State      VolumeState
	// Owing keeps the volumes that owe work whatever their claims: a create or delete not
	// finished (State not ready), a ControllerExpandVolume sent whose answer is not recorded
	// (ExpandMin above 0), or a NodeExpandVolume owed (NodeExpandMin above 0). One scan of the
	// table.
	Owing bool
}

// VolumeStore reads and writes volumes.
type VolumeStore interface {
	// Get returns one volume, or an error matching ErrNotFound.
	Get(id string) (Volume, error)
	// List returns the volumes matching f, ordered by ID.
	List(f VolumeFilter) ([]Volume, error)
	// ByPrefix returns the volumes whose ID starts with prefix, ordered by ID, for commands that
	// accept an unambiguous prefix.
	ByPrefix(prefix string) ([]Volume, error)
	// Insert adds a volume and sets its CreatedAt and UpdatedAt; ErrConflict if the ID is taken.
	Insert(v *Volume) error
	// Update replaces every field of an existing volume but its creation time and its access and
	// attachment modes, and sets UpdatedAt; v's modes are set to the stored ones. The modes are
	// the live claims' (docs/architecture.md, Modes: ClaimStore's Insert and Free set them), so a
	// copy of the volume read before a claim was admitted or freed cannot write them back.
	Update(v *Volume) error
	// Delete removes a volume; ErrConflict while claims or a staging refer to it. Its past
	// claims stay in the history, without their mount flags: those may hold a credential
	// (password=...), which no longer has a use and would otherwise outlive the volume.
	Delete(id string) error
	// EachBrief streams every volume's list fields with its live claims counted, ordered by
	// ID, from one query that decodes none of the JSON columns (what a list of 10,000 volumes
	// needs): fn sees each row as it is read (b is reused: copy what it keeps), so a list is
	// written out without building it first. cols says which fields it reads; the others stay
	// zero.
	EachBrief(cols BriefColumns, fn func(b *VolumeBrief) error) error
	// CountByPlugin counts the volumes that name a plugin.
	CountByPlugin(pluginID string) (int, error)
	// NearExternalIDs lists, ordered by volume ID, the volume, plugin and external IDs of the
	// volumes whose external ID may be externalID spelled otherwise, or is it (engine's
	// nearStorage, which decides by spec.SameStorageID and the plugin): those whose stored key
	// (external_key) is externalID's, found through its index, and any whose key was stored
	// by a volctl with other Unicode tables or by hand (nearKeyWhere), of every plugin.
	NearExternalIDs(externalID string) ([]VolumeExternalID, error)
	// SetNodeExpansion records the NodeExpandVolume owed to this node for a volume (min 0: none),
	// as not known to have had its controller's step (NodeExpandControllerDone false), touching
	// nothing else; ErrNotFound if there is no such volume.
	SetNodeExpansion(id string, min, max int64) error
	// SetNodeExpansionControllerDone records that the controller has had the size of the
	// volume's owed node expansion (a ControllerExpandVolume sent before the node's step answered
	// at it), touching nothing else; ErrNotFound if there is no such volume.
	SetNodeExpansionControllerDone(id string) error
	// SetExpansionIntent records the ControllerExpandVolume about to be sent for a volume (min
	// 0: none pending, its answer recorded) and clears any expansion kept beneath it, touching
	// nothing else; ErrNotFound if there is no such volume.
	SetExpansionIntent(id string, min, max int64) error
	// SetExpansionIntentOver records the ControllerExpandVolume about to be sent for a volume
	// over an earlier pending one, whose answer was lost too (beneathMin, beneathMax: put back
	// where this one is refused), touching nothing else; ErrNotFound if there is no such volume.
	SetExpansionIntentOver(id string, min, max, beneathMin, beneathMax int64) error
	// SetExpansionLimit sets the limit of a volume's pending expansion, and of the one kept
	// beneath it, to max (each only where there is one), touching nothing else; ErrNotFound if
	// there is no such volume.
	SetExpansionLimit(id string, max int64) error
	// SetCreateCleanup records whether a volume (marked deleting) is its create's cleanup: the
	// create's answer, unusable, recorded to be deleted again (migration 0022), touching nothing
	// else; ErrNotFound if there is no such volume. Update leaves it as it is.
	SetCreateCleanup(id string, on bool) error
	// CreateCleanup says whether SetCreateCleanup marked a volume its create's cleanup;
	// ErrNotFound if there is no such volume. Read alone, where a refused delete decides what
	// the volume goes back to, not by Get (which every claim and status reads).
	CreateCleanup(id string) (bool, error)
	// SetSourceGone records that a restore's answer named the volume its snapshot was taken
	// of, which the plugin no longer had before the CreateVolume (migration 0022): a new volume
	// under a freed ID. Touches nothing else; ErrNotFound if there is no such volume.
	SetSourceGone(id string) error
	// SourceGone says whether SetSourceGone marked a volume; ErrNotFound if there is no such
	// volume. Read alone, where a delete weighs whether the volume is its own source.
	SourceGone(id string) (bool, error)
	// SetSourcesGone records the external IDs of the volumes a restore's snapshot was taken of
	// that the plugin no longer had before its first CreateVolume (migration 0025), replacing
	// what was recorded; touches nothing else; ErrNotFound if there is no such volume.
	SetSourcesGone(id string, sources []string) error
	// SourcesGone is what SetSourcesGone recorded (nil for none); ErrNotFound if there is no
	// such volume. Read alone, where a restore's CreateVolume is sent again.
	SourcesGone(id string) ([]string, error)
	// OnNode lists, ordered, the IDs of a plugin's volumes that are on this node: those with a
	// live claim or a staging row (an attachment or staging, or the intent of one).
	OnNode(pluginID string) ([]string, error)
}

// Volumes is the volume API inside this transaction.
func (tx *Tx) Volumes() VolumeStore { return volumes{tx} }

type volumes struct{ tx *Tx }

const volumeColumns = `id, namespace, name, plugin_id, external_id, csi_name, state, capabilities,
	mount_options, secrets, parameters, context, topology_request, accessible_topology, capacity_bytes,
	requested_min, requested_max, snapshot_id, clone_id, access_mode, attachment_mode, node_expand_min,
	node_expand_max, created_at, updated_at`

// volumeReadColumns are volumeColumns and the ones only SetExpansionIntent or Insert writes,
// which scanVolume reads.
const volumeReadColumns = volumeColumns + `, expand_min, expand_max, clone_spec, node_expand_ctrl, node_expand_guess,
	expand_beneath_min, expand_beneath_max, node_only_from_capacity, node_only_from_min`

func scanVolume(sc scanner) (Volume, error) {
	var (
		v                                     Volume
		caps, mo, sec, params, vctx, tr, topo sql.NullString
		cloneSpec                             sql.NullString
		fromCapacity, fromMin                 sql.NullInt64
		c, u                                  int64
	)
	err := sc.Scan(&v.ID, &v.Namespace, &v.Name, &v.PluginID, &v.ExternalID, &v.CSIName, &v.State, &caps,
		&mo, &sec, &params, &vctx, &tr, &topo, &v.CapacityBytes,
		&v.RequestedMin, &v.RequestedMax, &v.SnapshotID, &v.CloneID, &v.AccessMode, &v.AttachmentMode,
		&v.NodeExpandMin, &v.NodeExpandMax, &c, &u, &v.ExpandMin, &v.ExpandMax, &cloneSpec, &v.NodeExpandControllerDone, &v.NodeExpandGuessed,
		&v.ExpandBeneathMin, &v.ExpandBeneathMax, &fromCapacity, &fromMin)
	if err != nil {
		return Volume{}, err
	}
	if v.NodeExpandMin > 0 && fromCapacity.Valid && fromMin.Valid {
		v.NodeOnlyFrom = &SizeRecord{CapacityBytes: fromCapacity.Int64, RequestedMin: fromMin.Int64}
	}
	var mor *mountOptionsRow
	if err := decJSONs(jsonCol{caps, &v.Capabilities}, jsonCol{mo, &mor}, jsonCol{sec, &v.Secrets},
		jsonCol{params, &v.Parameters}, jsonCol{vctx, &v.Context}, jsonCol{tr, &v.TopologyRequest},
		jsonCol{topo, &v.AccessibleTopology}); err != nil {
		return Volume{}, fmt.Errorf("volume %q: decode: %w", v.ID, err)
	}
	v.MountOptions = mor.spec()
	v.CloneSpec = cloneSpec.String
	v.CreatedAt, v.UpdatedAt = decTime(c), decTime(u)
	return v, nil
}

// volumeArgs are the columns after id and before the timestamps, in volumeColumns order.
func volumeArgs(v *Volume) ([]any, error) {
	args := []any{v.Namespace, v.Name, v.PluginID, v.ExternalID, v.CSIName, v.State}
	for _, j := range []any{v.Capabilities, toMountOptionsRow(v.MountOptions), v.Secrets.Plain(), v.Parameters,
		v.Context, v.TopologyRequest, v.AccessibleTopology} {
		col, err := encJSON(j)
		if err != nil {
			return nil, fmt.Errorf("volume %q: encode: %w", v.ID, err)
		}
		args = append(args, col)
	}
	return append(args, v.CapacityBytes, v.RequestedMin, v.RequestedMax, v.SnapshotID, v.CloneID,
		v.AccessMode, v.AttachmentMode, v.NodeExpandMin, v.NodeExpandMax), nil
}

func volumeWhat(id string) string { return fmt.Sprintf("volume %q", id) }

func (vs volumes) Get(id string) (Volume, error) {
	return getOne(vs.tx, volumeWhat(id), scanVolume, `SELECT `+volumeReadColumns+` FROM volumes WHERE id = ?`, id)
}

func (vs volumes) List(f VolumeFilter) ([]Volume, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, val string }{
		{"namespace", f.Namespace}, {"plugin_id", f.PluginID}, {"external_id", f.ExternalID}, {"state", string(f.State)},
	} {
		if c.val != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.val)
		}
	}
	if f.Owing {
		where = append(where, "(state <> 'ready' OR expand_min > 0 OR node_expand_min > 0)")
	}
	q := `SELECT ` + volumeReadColumns + ` FROM volumes`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	return listAll(vs.tx, "list volumes", scanVolume, q+` ORDER BY id`, args...)
}

// VolumeBrief is what a volume list shows of a volume, with its live claims counted: read and
// write claims, and those not at rest (see Claim.AtRest).
type VolumeBrief struct {
	ID             string
	Namespace      string
	Name           string
	PluginID       string
	State          VolumeState
	AccessMode     spec.AccessMode
	AttachmentMode spec.AttachmentMode
	CapacityBytes  int64
	ReadClaims     int
	WriteClaims    int
	Unsettled      int
	CreatedAt      time.Time // which record of the ID it is (BriefAll)
	// Topologies is where the volume is accessible from: its accessible topology, else its
	// topology request's required list (none: everywhere), decoded once per distinct text (a
	// plugin's volumes mostly share one) and shared between rows: read it, never change it.
	Topologies []spec.Topology
}

// BriefColumns says which of a VolumeBrief's fields a list reads. Every column read of every
// row is a call into SQLite and, for text, a string made: the volume table reads what it shows.
type BriefColumns uint8

const (
	// BriefShown is what the volume table shows: the ID, name, plugin, state and access mode,
	// and the claim counts.
	BriefShown BriefColumns = iota
	// BriefAll adds the namespace, the attachment mode, the capacity and the created-at (--json).
	BriefAll
	// BriefTopologies, added to either, reads Topologies too: only a list some plugin's node
	// topology judges them by needs them (engine.EachVolume), and they are the longest text
	// of a row.
	BriefTopologies BriefColumns = 2
)

// EachBrief streams the volumes' briefs in ID order to fn, one row at a time (b is reused
// between calls: copy what you keep). An error from fn stops the read and is returned as is.
func (vs volumes) EachBrief(cols BriefColumns, fn func(b *VolumeBrief) error) (err error) {
	// The claims are counted first, in one pass over the claims table in volume ID order, and
	// merged with the volumes as they stream in the same order. Counted in the volumes' query
	// (a join or a subquery on claims' (volume_id, alloc) index), they cost a search of that
	// index for each volume, claimed or not: most of the list's time at 10,000 volumes.
	counts, err := vs.claimCounts()
	if err != nil {
		return err
	}
	// The text columns come packed into one, NUL between them (briefPacked), and capacity and
	// created-at as integer columns scanned into an any, which database/sql assigns without reflection: each
	// column of each row is a few calls into SQLite, each taking the connection's mutex, and a
	// string and its boxing made, and this is the list of every volume, 10,000 rows and more.
	// The packed scan takes three quarters of the time of the columns one by one.
	var (
		b        VolumeBrief
		packed   string
		capacity any
		created  any
	)
	all, topo := cols&BriefAll != 0, cols&BriefTopologies != 0
	query, fields, dest := briefPacked(all, topo), 5, []any{&packed}
	if all {
		query, fields, dest = query+`, capacity_bytes, created_at`, fields+2, append(dest, &capacity, &created)
	}
	if topo {
		fields += 2
	}
	rows, err := vs.tx.query(query + ` FROM volumes ORDER BY id`)
	if err != nil {
		return fmt.Errorf("volume list: %w", mapBusy(err))
	}
	defer func() {
		if cerr := rows.close(); err == nil && cerr != nil {
			err = fmt.Errorf("volume list: %w", mapBusy(cerr))
		}
	}()
	var f [9]string
	var topologies map[string][]spec.Topology // by the two columns' text (BriefTopologies)
	lastKey := "\x00"                         // b.Topologies's: none
	if topo {
		topologies = map[string][]spec.Topology{lastKey: nil}
	}
	for rows.rows.Next() {
		if err := rows.rows.Scan(dest...); err != nil {
			return fmt.Errorf("volume list: %w", err)
		}
		unpackBrief(packed, f[:fields])
		b.ID, b.PluginID, b.State, b.AccessMode, b.Name = f[0], f[1], VolumeState(f[2]), spec.AccessMode(f[3]), f[fields-1]
		at := 4 // the next field
		if all {
			b.Namespace, b.AttachmentMode = f[4], spec.AttachmentMode(f[5])
			at = 6
		}
		if topo {
			// The two topology columns, NUL between them, as one key: a substring of the row.
			from := len(f[0]) + len(f[1]) + len(f[2]) + len(f[3]) + 4
			if all {
				from += len(f[4]) + len(f[5]) + 2
			}
			// The previous row's, most often (a plugin's volumes share theirs): no lookup.
			if key := packed[from : from+len(f[at])+1+len(f[at+1])]; key != lastKey {
				topos, ok := topologies[key]
				if !ok {
					if topos, err = briefTopologies(f[at], f[at+1]); err != nil {
						return fmt.Errorf("volume list: volume %q: %w", b.ID, err)
					}
					topologies[key] = topos
				}
				b.Topologies, lastKey = topos, key
			}
		}
		b.CapacityBytes, b.CreatedAt = anyInt64(capacity), decTime(anyInt64(created))
		// Both lists are in SQLite's BINARY order, which is Go's order of strings (bytewise).
		for len(counts) > 0 && counts[0].volumeID < b.ID {
			counts = counts[1:] // a claim of no volume: the foreign key forbids it
		}
		b.ReadClaims, b.WriteClaims, b.Unsettled = 0, 0, 0
		if len(counts) > 0 && counts[0].volumeID == b.ID {
			b.ReadClaims, b.WriteClaims, b.Unsettled = counts[0].read, counts[0].write, counts[0].unsettled
			counts = counts[1:]
		}
		if err := fn(&b); err != nil {
			return err
		}
	}
	if err := rows.c.check(rows.rows.Err()); err != nil {
		return fmt.Errorf("volume list: %w", mapBusy(err))
	}
	return nil
}

// briefPacked is the SELECT of a volume's brief text columns as one, separated by NUL: the
// ID, plugin, state and access mode, with all the namespace and attachment mode, and the name
// last. None of them but the name can hold a NUL (IDs are checked by spec.ValidateID, the
// others are volctl's own words), so the name, which is free text, is what follows the last
// separator unpackBrief looks for, whatever it holds.
func briefPacked(all, topologies bool) string {
	cols := `id || char(0) || plugin_id || char(0) || state || char(0) || access_mode`
	if all {
		cols += ` || char(0) || namespace || char(0) || attachment_mode`
	}
	if topologies {
		cols += ` || char(0) || ifnull(accessible_topology, '') || char(0) || ifnull(topology_request, '')`
	}
	return `SELECT ` + cols + ` || char(0) || name`
}

// briefTopologies is where a volume whose accessible_topology and topology_request columns hold
// accessible and request is accessible from (VolumeBrief.Topologies).
func briefTopologies(accessible, request string) ([]spec.Topology, error) {
	var (
		topos []spec.Topology
		tr    *spec.TopologyRequest
	)
	if err := decJSONs(jsonCol{sql.NullString{String: accessible, Valid: accessible != ""}, &topos},
		jsonCol{sql.NullString{String: request, Valid: request != ""}, &tr}); err != nil {
		return nil, err
	}
	if len(topos) > 0 {
		return topos, nil
	}
	if tr != nil && len(tr.Required) > 0 {
		return tr.Required, nil
	}
	return nil, nil
}

// unpackBrief splits a briefPacked row into f, whose last element takes the rest (the name).
// The query puts each separator there, so every one is found.
func unpackBrief(packed string, f []string) {
	rest := packed
	for i := range len(f) - 1 {
		f[i], rest, _ = strings.Cut(rest, "\x00")
	}
	f[len(f)-1] = rest
}

// claimCounts is a volume's live claims counted as VolumeBrief counts them.
type claimCounts struct {
	volumeID               string
	read, write, unsettled int
}

// claimCounts counts the claims of every claimed volume, in volume ID order; "unsettled" is
// the negation of Claim.AtRest.
func (vs volumes) claimCounts() ([]claimCounts, error) {
	return listAll(vs.tx, "volume list: count claims", func(sc scanner) (claimCounts, error) {
		var c claimCounts
		var rd, wr, unsettled any
		err := sc.Scan(&c.volumeID, &rd, &wr, &unsettled)
		c.read, c.write, c.unsettled = int(anyInt64(rd)), int(anyInt64(wr)), int(anyInt64(unsettled))
		return c, err
	}, `SELECT volume_id, SUM(mode = 'read'), SUM(mode = 'write'),
		SUM(NOT (state = 'published' AND releasing = 0 AND needs_reconcile = 0))
		FROM claims GROUP BY volume_id ORDER BY volume_id`)
}

// anyInt64 is an INTEGER column scanned into an any: int64, or nil for NULL (0).
func anyInt64(v any) int64 {
	n, _ := v.(int64)
	return n
}

func (vs volumes) ByPrefix(prefix string) ([]Volume, error) {
	// A range on the primary key rather than LIKE, which would treat '_' and '%' in IDs as
	// wildcards. 0xFF never occurs in UTF-8, so prefix+"\xff" sorts after every ID with prefix.
	return listAll(vs.tx, fmt.Sprintf("volumes with prefix %q", prefix), scanVolume,
		`SELECT `+volumeReadColumns+` FROM volumes WHERE id >= ? AND id < ? ORDER BY id`, prefix, prefix+"\xff")
}

func (vs volumes) Insert(v *Volume) error {
	args, err := volumeArgs(v)
	if err != nil {
		return err
	}
	now := vs.tx.now()
	keyCol, keyArg := vs.tx.keyColumn("external_key", v.ExternalID)
	_, err = vs.tx.exec(`INSERT INTO volumes (`+volumeColumns+keyCol+`) VALUES (?`+strings.Repeat(", ?", 24+len(keyArg))+`)`,
		append(append(append([]any{v.ID}, args...), encTime(now), encTime(now)), keyArg...)...)
	if err != nil {
		return wrap(err, volumeWhat(v.ID), "")
	}
	if v.CloneSpec != "" {
		// Its own statement, as SetExpansionIntent's columns have theirs: a volume that is no
		// clone is written as the schema before migration 0013 takes it.
		if _, err := vs.tx.exec(`UPDATE volumes SET clone_spec = ? WHERE id = ?`, v.CloneSpec, v.ID); err != nil {
			return wrap(err, volumeWhat(v.ID), "")
		}
	}
	if v.NodeExpandMin > 0 && v.NodeExpandControllerDone {
		// As Update writes it: only with a debt, here one recorded with the volume, in a
		// statement of its own (TestRoundTripEveryField).
		if _, err := vs.tx.exec(`UPDATE volumes SET node_expand_ctrl = 1 WHERE id = ?`, v.ID); err != nil {
			return wrap(err, volumeWhat(v.ID), "")
		}
	}
	if v.NodeExpandMin > 0 && v.NodeExpandGuessed {
		if _, err := vs.tx.exec(`UPDATE volumes SET node_expand_guess = 1 WHERE id = ?`, v.ID); err != nil {
			return wrap(err, volumeWhat(v.ID), "")
		}
	}
	if capacity, min := nodeOnlyFromArgs(v); capacity != nil {
		if _, err := vs.tx.exec(`UPDATE volumes SET node_only_from_capacity = ?, node_only_from_min = ? WHERE id = ?`, capacity, min, v.ID); err != nil {
			return wrap(err, volumeWhat(v.ID), "")
		}
	}
	v.CreatedAt, v.UpdatedAt = now, now
	return nil
}

func (vs volumes) Update(v *Volume) error {
	args, err := volumeArgs(v)
	if err != nil {
		return err
	}
	// volumeArgs ends with access_mode, attachment_mode, node_expand_min, node_expand_max:
	// leave the modes out.
	n := len(args)
	args = append(args[:n-4:n-4], args[n-2:]...)
	// args[7] and args[8] are mount_options and secrets, as the statement below sets them.
	if err := vs.tx.noteSecretsUnlessSame(`SELECT mount_options IS ? AND secrets IS ? FROM volumes WHERE id = ?`, args[7], args[8], v.ID); err != nil {
		return fmt.Errorf("%s: %w", volumeWhat(v.ID), err)
	}
	now := vs.tx.now()
	keySet, keyArg := "", []any(nil)
	if vs.tx.s.keyed {
		keySet, keyArg = ", external_key = ?", []any{storageKey(v.ExternalID)}
	}
	var access, attachment string
	fromCapacity, fromMin := nodeOnlyFromArgs(v)
	err = vs.tx.queryRow(`
		UPDATE volumes SET namespace = ?, name = ?, plugin_id = ?, external_id = ?, csi_name = ?, state = ?,
			capabilities = ?, mount_options = ?, secrets = ?, parameters = ?, context = ?, topology_request = ?,
			accessible_topology = ?, capacity_bytes = ?, requested_min = ?, requested_max = ?, snapshot_id = ?,
			clone_id = ?, node_expand_min = ?, node_expand_max = ?, updated_at = ?`+keySet+`, node_expand_ctrl = ?, node_expand_guess = ?,
			node_only_from_capacity = ?, node_only_from_min = ?
		WHERE id = ? RETURNING access_mode, attachment_mode`, append(append(append(args, encTime(now)), keyArg...),
		v.NodeExpandMin > 0 && v.NodeExpandControllerDone, v.NodeExpandMin > 0 && v.NodeExpandGuessed, fromCapacity, fromMin, v.ID)...).Scan(&access, &attachment)
	if err != nil {
		return wrap(err, volumeWhat(v.ID), "")
	}
	v.AccessMode, v.AttachmentMode = spec.AccessMode(access), spec.AttachmentMode(attachment)
	v.UpdatedAt = now
	return nil
}

func (vs volumes) Delete(id string) error {
	if err := vs.tx.noteSecrets(); err != nil {
		return fmt.Errorf("%s: %w", volumeWhat(id), err)
	}
	res, err := vs.tx.exec(`DELETE FROM volumes WHERE id = ?`, id)
	if err := affected(res, err, volumeWhat(id), "in use: live claims or a staging still refer to it"); err != nil {
		return err
	}
	// The volume's past claims keep what they say (who, when, how it ended), not the mount
	// flags they were made with: a flag may be a password (a cifs or ceph claim's), and the
	// history kept it after the volume and its secrets went, in the database file until 10,000
	// later claims pruned it (secrets37, TestEchoedSecretsLeaveNoStoredBytes). The flags
	// leave the state in this transaction, as the volume's secrets do (noteSecrets above: the
	// log's echoes of them are scrubbed and the files wiped).
	if _, err := vs.tx.exec(`UPDATE claim_history SET mount_flags = NULL WHERE volume_id = ? AND mount_flags IS NOT NULL`, id); err != nil {
		return wrap(err, fmt.Sprintf("forget the mount flags of %s's past claims", volumeWhat(id)), "")
	}
	return nil
}

func (vs volumes) CountByPlugin(pluginID string) (int, error) {
	var n int
	if err := vs.tx.queryRow(`SELECT count(*) FROM volumes WHERE plugin_id = ?`, pluginID).Scan(&n); err != nil {
		return 0, wrap(err, fmt.Sprintf("count volumes of plugin %q", pluginID), "")
	}
	return n, nil
}

// nearExternalIDsQuery is NearExternalIDs' query, around nearKeyWhere's condition.
const nearExternalIDsQuery = `SELECT id, plugin_id, external_id FROM volumes WHERE %s AND external_id != ''`

// VolumeExternalID is a volume's ID, plugin and external ID (VolumeStore.NearExternalIDs).
type VolumeExternalID struct{ ID, PluginID, ExternalID string }

func (vs volumes) NearExternalIDs(externalID string) ([]VolumeExternalID, error) {
	if externalID == "" {
		return nil, nil
	}
	where, args := nearKeyWhere("external_key", storageKey(externalID))
	// The ID as the error shows it: a plugin's answer may hold one of megabytes. Sorted here,
	// the few rows found: an ORDER BY had SQLite walk the table in id order instead of the
	// key's index (TestNearLooksUseTheKeyIndex).
	out, err := listAll(vs.tx, fmt.Sprintf("list external IDs near %q", spec.Cut(externalID, 256)), func(sc scanner) (VolumeExternalID, error) {
		var v VolumeExternalID
		return v, sc.Scan(&v.ID, &v.PluginID, &v.ExternalID)
	}, fmt.Sprintf(nearExternalIDsQuery, where), args...)
	slices.SortFunc(out, func(a, b VolumeExternalID) int { return strings.Compare(a.ID, b.ID) })
	return out, err
}

func (vs volumes) OnNode(pluginID string) ([]string, error) {
	return listAll(vs.tx, fmt.Sprintf("list volumes of plugin %q on this node", pluginID), func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	}, `SELECT v.id FROM volumes v WHERE v.plugin_id = ?
		AND (EXISTS (SELECT 1 FROM claims c WHERE c.volume_id = v.id)
		  OR EXISTS (SELECT 1 FROM stagings s WHERE s.volume_id = v.id))
		ORDER BY v.id`, pluginID)
}

func (vs volumes) SetNodeExpansion(id string, min, max int64) error {
	res, err := vs.tx.exec(`UPDATE volumes SET node_expand_min = ?, node_expand_max = ?, node_expand_ctrl = 0, node_expand_guess = 0,
		node_only_from_capacity = NULL, node_only_from_min = NULL WHERE id = ?`, min, max, id)
	return affected(res, err, volumeWhat(id), "")
}

func (vs volumes) SetNodeExpansionControllerDone(id string) error {
	res, err := vs.tx.exec(`UPDATE volumes SET node_expand_ctrl = (node_expand_min > 0) WHERE id = ?`, id)
	return affected(res, err, volumeWhat(id), "")
}

func (vs volumes) SetCreateCleanup(id string, on bool) error {
	res, err := vs.tx.exec(`UPDATE volumes SET create_cleanup = ? WHERE id = ?`, on, id)
	return affected(res, err, volumeWhat(id), "")
}

func (vs volumes) CreateCleanup(id string) (bool, error) {
	return getOne(vs.tx, volumeWhat(id), func(sc scanner) (bool, error) {
		var on bool
		return on, sc.Scan(&on)
	}, `SELECT create_cleanup FROM volumes WHERE id = ?`, id)
}

func (vs volumes) SetSourceGone(id string) error {
	res, err := vs.tx.exec(`UPDATE volumes SET source_gone = 1 WHERE id = ?`, id)
	return affected(res, err, volumeWhat(id), "")
}

func (vs volumes) SetSourcesGone(id string, sources []string) error {
	text := ""
	if len(sources) > 0 {
		b, err := json.Marshal(sources)
		if err != nil {
			return err
		}
		text = string(b)
	}
	res, err := vs.tx.exec(`UPDATE volumes SET sources_gone = ? WHERE id = ?`, text, id)
	return affected(res, err, volumeWhat(id), "")
}

func (vs volumes) SourcesGone(id string) ([]string, error) {
	return getOne(vs.tx, volumeWhat(id), func(sc scanner) ([]string, error) {
		var text string
		if err := sc.Scan(&text); err != nil || text == "" {
			return nil, err
		}
		var sources []string
		if err := json.Unmarshal([]byte(text), &sources); err != nil {
			return nil, fmt.Errorf("volume %q: sources_gone %q: %w", id, text, err)
		}
		return sources, nil
	}, `SELECT sources_gone FROM volumes WHERE id = ?`, id)
}

func (vs volumes) SourceGone(id string) (bool, error) {
	return getOne(vs.tx, volumeWhat(id), func(sc scanner) (bool, error) {
		var on bool
		return on, sc.Scan(&on)
	}, `SELECT source_gone FROM volumes WHERE id = ?`, id)
}

func (vs volumes) SetExpansionIntent(id string, min, max int64) error {
	return vs.SetExpansionIntentOver(id, min, max, 0, 0)
}

func (vs volumes) SetExpansionIntentOver(id string, min, max, beneathMin, beneathMax int64) error {
	res, err := vs.tx.exec(`UPDATE volumes SET expand_min = ?, expand_max = ?, expand_beneath_min = ?, expand_beneath_max = ? WHERE id = ?`,
		min, max, beneathMin, beneathMax, id)
	return affected(res, err, volumeWhat(id), "")
}

func (vs volumes) SetExpansionLimit(id string, max int64) error {
	res, err := vs.tx.exec(`UPDATE volumes SET expand_max = CASE WHEN expand_min > 0 THEN ? ELSE 0 END,
		expand_beneath_max = CASE WHEN expand_beneath_min > 0 THEN ? ELSE 0 END WHERE id = ?`, max, max, id)
	return affected(res, err, volumeWhat(id), "")
}
