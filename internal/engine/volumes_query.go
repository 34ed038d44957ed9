package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// Volumes lists every volume with its claim counts and whether it can take claims now. It is
// one query for the volumes and their claim counts and one for the plugins' health, whatever
// the number of volumes.
func (e *Engine) Volumes(ctx context.Context) ([]VolumeSummary, error) {
	return e.volumes(ctx, false)
}

// VolumesShown is Volumes as printed: each volume's names scrubbed (EachVolumeShown).
func (e *Engine) VolumesShown(ctx context.Context) ([]VolumeSummary, error) {
	return e.volumes(ctx, true)
}

func (e *Engine) volumes(ctx context.Context, shown bool) ([]VolumeSummary, error) {
	out := []VolumeSummary{}
	err := e.eachVolume(ctx, AllVolumeFields, shown, func(v *VolumeSummary) error {
		out = append(out, *v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// VolumeFields says which of a VolumeSummary's fields EachVolumeShown fills.
type VolumeFields = store.BriefColumns

const (
	// TableVolumeFields fills what the volume table shows: ID, name, plugin, state,
	// schedulable, access mode and the claim counts; namespace, attachment mode, capacity and
	// created-at stay zero.
	TableVolumeFields = store.BriefShown
	// AllVolumeFields fills every field.
	AllVolumeFields = store.BriefAll
)

// EachVolumeShown is Volumes streamed, for a list printed: fn sees each volume, in ID order,
// as its row is read, so a list of 10,000 volumes is written out without being built first. v
// is reused between calls (copy what you keep). fields says which of v's fields are filled. fn
// runs inside the read's snapshot, which never holds up a writer: it must not call the
// engine. An error from fn stops the list and is returned. Each volume's ID, namespace, name
// and plugin ID are scrubbed of the state's secrets read in the same snapshot, as every
// printed ID is (Key and PluginKey keep them as read). Before, the volume list, its JSON, --jq
// and -t showed a name holding a secret value whole, which `volume status ID` masked
// (TestVolumeListMasksASecretInTheVolumesNames).
func (e *Engine) EachVolumeShown(ctx context.Context, fields VolumeFields, fn func(v *VolumeSummary) error) error {
	return e.eachVolume(ctx, fields, true, fn)
}

// eachVolume is EachVolumeShown, its names scrubbed when shown, as read when not (Volumes).
func (e *Engine) eachVolume(ctx context.Context, fields VolumeFields, shown bool, fn func(v *VolumeSummary) error) error {
	return e.store.View(ctx, func(tx *store.Tx) error {
		plugins, err := tx.Plugins().List()
		if err != nil {
			return err
		}
		// Shown, each row's names are scrubbed; the plugin's and the namespace, which repeat,
		// through a memo, the ID and the name, each its own, not: a memo of 20,000 strings
		// each used once cost more than their scrub (BenchmarkEachVolume10k's secrets).
		var scrub, scrubRepeated func(string) string
		if shown {
			values, err := tx.SecretValues()
			if err != nil {
				return err
			}
			if values = e.andForgotten(values); len(values) > 0 {
				scrub = e.scrubbers.get(values)
				scrubRepeated = memoized(scrub)
			}
		}
		handedTo, err := handedOverTo(tx)
		if err != nil {
			return err
		}
		why := make(map[string]Unschedulable, len(plugins))       // a plugin not there is not registered
		nodes := make(map[string]map[string]string, len(plugins)) // the topology of each plugin's node judged by
		for _, p := range plugins {
			why[p.ID] = healthWhy(recordedHealth(p.Health.Healthy, p.Health.Ready, p.Health.ProbedAt))
			if judgedTopology(p.Fingerprint) {
				nodes[p.ID] = p.Fingerprint.Topology
			}
		}
		if len(nodes) > 0 {
			fields |= store.BriefTopologies // read only where a node's topology judges them
		}
		var (
			v    VolumeSummary
			last struct { // the verdict of the last row with topologies
				plugin  string
				topos   *spec.Topology
				outside bool
			}
		)
		return tx.Volumes().EachBrief(fields, func(b *store.VolumeBrief) error {
			pw, known := why[b.PluginID]
			if !known {
				pw = PluginNotRegistered
			}
			// nodeOutside's rule, the plugin's part taken once above, and the verdict kept for
			// the next row of the plugin with the same topologies (the brief shares the slice).
			outside := false
			if len(b.Topologies) > 0 {
				if b.PluginID != last.plugin || &b.Topologies[0] != last.topos {
					node, judged := nodes[b.PluginID]
					last.plugin, last.topos, last.outside = b.PluginID, &b.Topologies[0], judged && !topologyMatch(node, b.Topologies)
				}
				outside = last.outside
			}
			v = VolumeSummary{
				ID: b.ID, Namespace: b.Namespace, Name: b.Name, PluginID: b.PluginID, State: string(b.State),
				Schedulable: b.State == store.VolumeReady && pw == Schedulable && !outside,
				AccessMode:  b.AccessMode, AttachmentMode: b.AttachmentMode, CapacityBytes: b.CapacityBytes,
				ReadClaims: b.ReadClaims, WriteClaims: b.WriteClaims, Unsettled: b.Unsettled,
				CreatedAt: b.CreatedAt, pluginWhy: pw, outside: outside, key: b.ID, pluginKey: b.PluginID,
			}
			if handedTo != nil {
				if to := handedTo[b.ID]; to != "" {
					v.Schedulable, v.handedTo = false, to
				}
			}
			if scrub != nil {
				v.ID, v.Namespace, v.Name, v.PluginID = scrub(v.ID), scrubRepeated(v.Namespace), scrub(v.Name), scrubRepeated(v.PluginID)
			}
			return fn(&v)
		})
	})
}

// handedOverTo is the Nomad address of each volume handed over to Nomad, by volume ID; nil for
// none, as in most states (one read of an empty table).
func handedOverTo(tx *store.Tx) (map[string]string, error) {
	hs, err := tx.Handovers().List()
	if err != nil || len(hs) == 0 {
		return nil, err
	}
	to := make(map[string]string, len(hs))
	for _, h := range hs {
		to[h.VolumeID] = h.Address
	}
	return to, nil
}

func volumeSummary(v store.Volume, claims []store.Claim, pluginTakesClaims bool) VolumeSummary {
	s := VolumeSummary{
		ID: v.ID, Namespace: v.Namespace, Name: v.Name, PluginID: v.PluginID, State: string(v.State),
		Schedulable: v.State == store.VolumeReady && pluginTakesClaims,
		AccessMode:  v.AccessMode, AttachmentMode: v.AttachmentMode, CapacityBytes: v.CapacityBytes,
		CreatedAt: v.CreatedAt, key: v.ID, pluginKey: v.PluginID,
	}
	for _, c := range claims {
		if c.Mode == store.ClaimWrite {
			s.WriteClaims++
		} else {
			s.ReadClaims++
		}
		if !c.AtRest() {
			s.Unsettled++
		}
	}
	return s
}

// AmbiguousError is returned for a volume ID prefix that matches several volumes.
type AmbiguousError struct {
	Prefix  string
	Matches []VolumeSummary
}

func (e *AmbiguousError) Error() string {
	ids := make([]string, len(e.Matches))
	for i, m := range e.Matches {
		ids[i] = m.ID
	}
	return fmt.Sprintf("prefix %q matches %d volumes: %s", e.Prefix, len(e.Matches), strings.Join(ids, ", "))
}

// Is makes an ambiguous prefix an invalid request (exit 2).
func (e *AmbiguousError) Is(target error) bool { return target == ErrInvalid }

// Volume returns everything about one volume, found by its ID or an unambiguous ID prefix.
func (e *Engine) Volume(ctx context.Context, idOrPrefix string) (VolumeInfo, error) {
	return byStoredID(ctx, e, store.VolumeIDs, idOrPrefix, func(id string) (VolumeInfo, error) { return e.volumeStored(ctx, id, false) })
}

// VolumeShown is Volume about to be shown: every string of it scrubbed of the secret values
// the state held when it was read, read in the same snapshot (and of those this process let
// go since, ForgottenHere); Key and PluginKey keep the IDs as stored. A scrub with a read of its
// own after the volume's (RedactValue) missed the secrets of a volume another process deleted
// in between: its plugin's echo of them (in its context, its external ID) was printed whole
// (TestVolumeDetailReadBeforeAnotherProcessDeletesItShowsNoSecret), as EachVolumeShown's names
// were before their scrub moved into their read.
func (e *Engine) VolumeShown(ctx context.Context, idOrPrefix string) (VolumeInfo, error) {
	return byStoredID(ctx, e, store.VolumeIDs, idOrPrefix, func(id string) (VolumeInfo, error) { return e.volumeStored(ctx, id, true) })
}

// VolumeRecorded returns nil when the state records volume id as the commands on one volume
// find it (the ID as given or as stored, byStoredID; no prefix, which Volume takes), else its
// not-found, naming the ID likely meant: the look before a question (cli's confirmedOnVolume).
func (e *Engine) VolumeRecorded(ctx context.Context, id string) error {
	return e.recorded(ctx, store.VolumeIDs, id, e.checkVolumeExists)
}

// PluginRecorded is VolumeRecorded for a plugin: nil when it is registered, else the
// not-found a command through it gives.
func (e *Engine) PluginRecorded(ctx context.Context, id string) error {
	return e.recorded(ctx, store.PluginIDs, id, e.checkPluginExists)
}

// SnapshotPluginRecorded is PluginRecorded for the snapshot commands through plugin id
// (snapshot delete and deregister): a plugin deregistered with --force keeps its snapshots'
// records, pending creates and recorded deletes, and the way to delete them, so one with any
// is found too. Before, their look at a terminal ended them as "not registered", where --yes
// deleted (TestSnapshotOfAForceDeregisteredPluginIsAskedForAtATerminal).
func (e *Engine) SnapshotPluginRecorded(ctx context.Context, id string) error {
	err := e.PluginRecorded(ctx, id)
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	kept := false
	if verr := e.store.View(ctx, func(tx *store.Tx) error {
		recs, err := tx.Snapshots().List(id)
		if err != nil || len(recs) > 0 {
			kept = len(recs) > 0
			return err
		}
		creates, err := tx.Snapshots().ListCreates(id)
		if err != nil || len(creates) > 0 {
			kept = len(creates) > 0
			return err
		}
		deletes, err := tx.Snapshots().ListDeleting()
		kept = slices.ContainsFunc(deletes, func(d store.SnapshotDelete) bool { return d.PluginID == id })
		return err
	}); verr != nil || kept {
		return nil // kept; or unread, left to the command to say
	}
	return err
}

// recorded is check of id, found in table t as given or as stored (byStoredID), whose
// not-found then names the ID likely meant.
func (e *Engine) recorded(ctx context.Context, t store.IDTable, id string, check func(ctx context.Context, id string) error) error {
	_, err := byStoredID(ctx, e, t, id, func(id string) (struct{}, error) { return struct{}{}, check(ctx, id) })
	return err
}

// volumeStored is Volume of the ID as stored (byStoredID), VolumeShown's when shown.
func (e *Engine) volumeStored(ctx context.Context, idOrPrefix string, shown bool) (VolumeInfo, error) {
	var (
		info       VolumeInfo
		unfinished string   // the staging path of a staging recorded not staged
		secrets    []string // the state's secret values, read with the volume when shown
	)
	err := e.store.View(ctx, func(tx *store.Tx) error {
		v, err := e.resolveVolume(tx, idOrPrefix)
		if err != nil {
			return err
		}
		if shown {
			if secrets, err = tx.SecretValues(); err != nil {
				return err
			}
		}
		claims, err := tx.Claims().ByVolume(v.ID)
		if err != nil {
			return err
		}
		p, perr := tx.Plugins().Get(v.PluginID)
		if perr != nil && !errors.Is(perr, store.ErrNotFound) {
			return perr
		}
		st, serr := tx.Stagings().Get(v.ID)
		if serr != nil && !errors.Is(serr, store.ErrNotFound) {
			return serr
		}
		info = volumeInfo(v, claims, p, perr == nil, st.Staged)
		info.leftover = len(claims) == 0 && serr == nil
		if st.ControllerPublished {
			info.AttachedTo = attachedNode(st)
			if st.NodeID == "" {
				info.setUnpublishWay(p, perr == nil, true) // an older volctl's row: no node recorded
			}
		}
		h, herr := tx.Handovers().Get(v.ID)
		switch {
		case herr == nil:
			hi := handoverInfo(h)
			info.Handover, info.Schedulable, info.handedTo = &hi, false, h.Address
			info.leftover = false // its detach is refused: Nomad's
		case !errors.Is(herr, store.ErrNotFound):
			return herr
		}
		info.NodeExpansionWaits = owedExpansionWaits(v, p, perr == nil, claims, st, info.Handover)
		info.UnpublishWaits = owedUnpublishWaits(info)
		again, err := recordedAgain(tx, v)
		if err != nil {
			return err
		}
		for _, o := range again {
			info.SameStorage = append(info.SameStorage, fmt.Sprintf("%s (plugin %s)", o.ID, o.PluginID))
		}
		unfinished = st.StagingPath
		if st.Staged {
			unfinished = ""
		}
		return nil
	})
	if err == nil && unfinished != "" {
		info.StagingLeft = e.stagingLeft(info.ID, unfinished)
	}
	if err == nil && shown {
		// A published target covered since: said as reconcile says it, where the claim read as
		// published and at rest (TestVolumeStatusSaysAPublishedTargetCoveredByAnotherMount).
		// For the views alone (VolumeShown): an export or a handover reads many volumes, and
		// the check costs a look at the mount table per claim.
		e.markCovered(info.Claims)
		for _, c := range info.Claims {
			if c.Covered != "" {
				info.Unsettled++ // not at rest, as the status summary counts it
			}
		}
	}
	if err == nil && shown {
		if secrets = e.andForgotten(secrets); len(secrets) > 0 {
			err = redactWith(&info, e.scrubbers.get(secrets))
		}
	}
	return info, err
}

// stagingLeft is path, volume id's staging path recorded with no staging done there (a
// NodeStageVolume not answered, or a NodeUnstageVolume answered whose path is kept until nothing
// is mounted there), when the mount table has something mounted at it, "" otherwise: after a
// plugin answered NodeUnstageVolume OK and left its mount, the staging is recorded not staged
// (the plugin disowned it) while the mount is there, and "Staged: no" alone told the reader the
// volume is on no path of this host (TestStatusOfAStagingLeftMountedByNodeUnstageNamesIt). The
// table is read only for such a staging; a read that fails is logged and names nothing.
func (e *Engine) stagingLeft(id, path string) string {
	left, err := e.mountsLeft(path)
	if err != nil {
		e.log.Warn(fmt.Sprintf("volume %q: whether its staging path %s is still mounted could not be read", id, path), "err", err)
		return ""
	}
	if len(left) == 0 {
		return ""
	}
	return path
}

// resolveVolume finds a volume by ID, else by unambiguous prefix.
func (e *Engine) resolveVolume(tx *store.Tx, idOrPrefix string) (store.Volume, error) {
	v, err := tx.Volumes().Get(idOrPrefix)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return v, err
	}
	matches, err := tx.Volumes().ByPrefix(idOrPrefix)
	if err != nil {
		return store.Volume{}, err
	}
	switch len(matches) {
	case 0:
		return store.Volume{}, notFoundf("volume %q not found", idOrPrefix)
	case 1:
		return matches[0], nil
	}
	// Their summaries as the volume list gives them (listedSummary): before, a volume outside
	// its plugin's topology, or handed over to Nomad, was said to take claims here
	// (TestAmbiguousPrefixSaysWhatTheListSaysOfSchedulable).
	amb := &AmbiguousError{Prefix: idOrPrefix}
	handedTo, err := handedOverTo(tx)
	if err != nil {
		return store.Volume{}, err
	}
	type plugin struct {
		p     store.Plugin
		known bool
	}
	plugins := map[string]plugin{}
	for _, m := range matches {
		claims, err := tx.Claims().ByVolume(m.ID)
		if err != nil {
			return store.Volume{}, err
		}
		pl, seen := plugins[m.PluginID]
		if !seen {
			p, err := tx.Plugins().Get(m.PluginID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return store.Volume{}, err
			}
			pl = plugin{p, err == nil}
			plugins[m.PluginID] = pl
		}
		amb.Matches = append(amb.Matches, listedSummary(m, claims, pl.p, pl.known, handedTo[m.ID]))
	}
	return store.Volume{}, amb
}

// listedSummary is volume v's summary judged as the volume list judges it (eachVolume): its
// plugin p (known: registered) taking claims, a volume handed over to Nomad (at handedTo) or
// outside the topology of its plugin's node not, and why its plugin takes none.
func listedSummary(v store.Volume, claims []store.Claim, p store.Plugin, known bool, handedTo string) VolumeSummary {
	s := volumeSummary(v, claims, known && takesClaims(p.Health))
	if handedTo != "" {
		s.Schedulable, s.handedTo = false, handedTo
	}
	s.owesExpansion = handedTo == "" && v.State == store.VolumeReady && (v.ExpandMin > 0 || v.NodeExpandMin > 0)
	if !known {
		s.pluginWhy = PluginNotRegistered
		return s
	}
	s.pluginWhy = healthWhy(recordedHealth(p.Health.Healthy, p.Health.Ready, p.Health.ProbedAt))
	if topos := volumeTopologies(v); nodeOutside(topos, p.Fingerprint) {
		s.Schedulable, s.outside, s.outsideWords = false, true, outsideWords(topos, p.ID, p.Fingerprint)
	}
	return s
}

// mountAllows is which of suid, dev and exec mo's mount flags ask for (spec.MountFlags.Allows):
// worked out here, as the view's strings are scrubbed of every mount flag before it is shown.
func mountAllows(mo *spec.MountOptions) []string {
	if mo == nil {
		return nil
	}
	return mo.MountFlags.Allows()
}

func volumeInfo(v store.Volume, claims []store.Claim, p store.Plugin, pluginKnown, staged bool) VolumeInfo {
	info := VolumeInfo{
		VolumeSummary: volumeSummary(v, claims, pluginKnown && takesClaims(p.Health)),
		ExternalID:    v.ExternalID, CSIName: v.CSIName,
		Provider: p.Fingerprint.Provider, ProviderVersion: p.Fingerprint.Version,
		PluginHealthy: pluginKnown && p.Health.Healthy, PluginReady: pluginKnown && p.Health.Ready,
		PluginError:  p.Health.LastError,
		RequestedMin: v.RequestedMin, RequestedMax: v.RequestedMax,
		Capabilities: v.Capabilities, MountOptions: v.MountOptions, MountAllows: mountAllows(v.MountOptions), TopologyRequest: v.TopologyRequest,
		AccessibleTopology: v.AccessibleTopology, Secrets: v.Secrets,
		Parameters: v.Parameters, Context: maps.Clone(v.Context),
		SnapshotID: v.SnapshotID, CloneID: v.CloneID, Staged: staged, NodeExpansionOwed: v.NodeExpandMin, ExpansionPending: v.ExpandMin,
		Claims: make([]ClaimInfo, 0, len(claims)), UpdatedAt: v.UpdatedAt,
	}
	if pluginKnown {
		info.pluginProbedAt = p.Health.ProbedAt
	}
	info.setUnpublishWay(p, pluginKnown, false)
	if !pluginKnown {
		info.PluginError = fmt.Sprintf("plugin %q is not registered", v.PluginID)
	} else if topos := volumeTopologies(v); nodeOutside(topos, p.Fingerprint) {
		info.Schedulable, info.outside, info.outsideWords = false, true, outsideWords(topos, p.ID, p.Fingerprint)
	}
	for _, c := range claims {
		info.Claims = append(info.Claims, claimInfo(c))
	}
	return info
}
