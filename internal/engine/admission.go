package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// checkNode applies, at admission, the limits Nomad's scheduler applies before placing a claim
// on a node, from what the plugin's NodeGetInfo said (its stored fingerprint):
// max_volumes_per_node, counted over the plugin's volumes already on this node (those of every
// plugin ID registered on its sockets: one process), and the
// volume's accessible topology, which must include the node's. A volume already on the node
// (a live claim or a staging) passes: it is counted already, and its topology was checked when
// it came. Refusals are conflicts (exit 4) naming the limit and what it counts, instead of a
// ControllerPublishVolume that fails later and is retried for good. onNode says the volume is
// on the node already (a live claim or a staging row), p is its plugin row as admission's
// transaction read it (load), with the fingerprint whose limits apply.
func checkNode(tx *store.Tx, v store.Volume, onNode bool, p *store.Plugin) error {
	if p == nil {
		return nil // the publish path reports the missing plugin
	}
	fp := p.Fingerprint
	if onNode {
		return standingOutsideTopology(tx, v, p)
	}
	if err := csi.CheckNodeTopology(fp.Provider, fp.Topology); err != nil {
		// Recorded before fingerprinting refused it: not matched, nor shown in a refusal. The
		// next connection fingerprints the plugin again (reusableFingerprint), recording what
		// it says now, or refusing it.
		return badAnswerf("plugin %q: %v (recorded by an older volctl): run `%s` to fingerprint it again",
			p.ID, err, shellquote.Command("volctl plugin status", p.ID))
	}
	// A plugin never fingerprinted (registered with an exec block the agent has not started)
	// has stated no topology: refused as such, not said outside it ("has no accessible
	// topology: the volume cannot be used on this node":
	// TestClaimThroughAPluginNotFingerprintedYetIsNotSaidOutsideItsTopology). Admitted, the
	// claim was left for a reconcile that published it on whatever node the plugin came up on
	// (TestClaimAdmittedThroughAPluginNotFingerprintedYetIsNotPublishedOutsideTheVolumesTopology).
	topos := volumeTopologies(v)
	if len(topos) > 0 && fp.At.IsZero() {
		return conflictf("volume %q is accessible only from topology %s, and plugin %q has not stated its node's yet (never fingerprinted: registered with an exec block the agent has not started, "+
			"or not reached since its registration): nothing was claimed; start it (`volctl agent` starts a plugin with an exec block), then claim again",
			v.ID, formatTopologies(topos), p.ID)
	}
	if len(topos) > 0 && !topologyMatch(fp.Topology, topos) {
		wayOut := ""
		if w := renamedNodeWayOut(p.ID, topos, fp.NodeID, fp.Topology); w != "" {
			wayOut = "; " + w
		}
		return conflictf("volume %q is accessible only from topology %s, and plugin %q's node %q %s (NodeGetInfo accessible_topology): the volume cannot be used on this node%s",
			v.ID, formatTopologies(topos), p.ID, fp.NodeID, nodeTopologyWords(fp.Topology), wayOut)
	}
	if fp.MaxVolumes < 0 {
		// Recorded before fingerprinting refused it (csi.Client.Fingerprint): not "no limit".
		return badAnswerf("plugin %q reported max_volumes_per_node %d (NodeGetInfo), which the CSI spec does not allow (0 is no limit, else a positive count), so its limit cannot be enforced: fix the plugin's configuration and restart it",
			p.ID, fp.MaxVolumes)
	}
	if fp.MaxVolumes > 0 {
		// The limit is the node plugin's, a process: the volumes of every plugin ID registered
		// on its sockets count (socketMates), as they share its storage and its mounts.
		on, err := volumesOnNode(tx, p.ID)
		if err != nil {
			return err
		}
		on = slices.DeleteFunc(on, func(id string) bool { return id == v.ID })
		if int64(len(on)) >= fp.MaxVolumes {
			way, err := nodeLimitWayOut(tx, on)
			if err != nil {
				return err
			}
			// As many as must leave for this one: a limit lowered by a restart below the
			// volumes there needs more than one, and "release one of them first", followed,
			// was refused again (TestNodeLimitLoweredBelowTheVolumesOnTheNodeAdviceWorks).
			leave := "one of them"
			switch need := int64(len(on)) - fp.MaxVolumes + 1; {
			case need <= 1:
			case need >= int64(len(on)):
				leave = fmt.Sprintf("all %d of them", len(on))
			default:
				leave = fmt.Sprintf("%d of them", need)
			}
			return conflictf("plugin %q allows %d volume(s) per node (NodeGetInfo max_volumes_per_node) and node %q has %d: %s; release %s first%s",
				p.ID, fp.MaxVolumes, fp.NodeID, len(on), describeIDs(on), leave, way)
		}
	}
	return nil
}

// standingOutsideTopology is checkNode's topology rule for a volume already on the node: its
// claims here stand, mounted as they are (nothing unmounts an alloc's data because its plugin
// restarted stating another accessible topology), but no other claim of it is admitted while
// the plugin states a topology the volume is not accessible from, as Nomad's scheduler would
// place none; before, any volume on the node passed, and the new claim shared the staging of a
// volume the plugin says this node cannot reach
// (TestNewClaimOutsideTheVolumesTopologyIsRefusedWhileItsClaimsStand). Its count against
// max_volumes_per_node is not asked again: it is counted already.
func standingOutsideTopology(tx *store.Tx, v store.Volume, p *store.Plugin) error {
	fp := p.Fingerprint
	topos := volumeTopologies(v)
	if len(topos) == 0 || !judgedTopology(fp) || topologyMatch(fp.Topology, topos) {
		return nil
	}
	claims, err := tx.Claims().ByVolume(v.ID)
	if err != nil {
		return err
	}
	standing := releaseThem(claims, "release its claims and stagings here", func(store.Claim) bool { return true })
	return conflictf("volume %q is accessible only from topology %s, and plugin %q's node %q %s now (NodeGetInfo accessible_topology, changed since the volume came to this node): "+
		"the claims it has here stand, mounted as they are, but no other is admitted here while the plugin states this topology; "+
		"%s, or %s to use the volume from a node in %s",
		v.ID, formatTopologies(topos), p.ID, fp.NodeID, nodeTopologyWords(fp.Topology), restartWords(p.ID, topos, fp.NodeID, fp.Topology), standing, formatTopologies(topos))
}

// restartWords says how to have plugin pluginID's node (nodeID, in topology node) in one of
// topos again: restart the plugin so, or, where its topology is its node ID and the volume was
// made under another (renamedNodeWayOut), start it with that node ID again.
func restartWords(pluginID string, topos []spec.Topology, nodeID string, node map[string]string) string {
	if w := renamedNodeWayOut(pluginID, topos, nodeID, node); w != "" {
		return w
	}
	return "restart the plugin with a topology the volume is accessible from"
}

// renamedNodeWayOut is what to do when plugin pluginID's topology is its node ID (a segment of
// its node's topology, node, holds its node ID, nodeID: volctl's hostpath plugin keys its
// topology so) and the volume's topologies, topos, name another node ID under that segment:
// the plugin was started under another node ID since the volume was made there, most often the
// same host renamed (hostpath's --node-id $(hostname)). Restarted with the old node ID, the
// volume is accessible again and its claims restored; before, the refusals said only to
// restart the plugin "with a topology the volume is accessible from", which names no flag of
// hostpath's, or, with an attachment, to release the claim and claim the volume again, which
// the topology refused (TestHostRenamedUnderATopologyKeyedByNodeID). "" when no segment says so.
func renamedNodeWayOut(pluginID string, topos []spec.Topology, nodeID string, node map[string]string) string {
	if nodeID == "" {
		return ""
	}
	for _, t := range topos {
		for _, k := range slices.Sorted(maps.Keys(t.Segments)) {
			if was := t.Segments[k]; was != "" && was != nodeID && node[k] == nodeID {
				return fmt.Sprintf("plugin %q's topology is its node ID (%s), and the volume was made on node %q: if this is that node under another name "+
					"(a host renamed, its plugin started with the host's name as its node ID), start plugin %q with node ID %q again "+
					"(volctl's hostpath plugin: --node-id %s), which the volume is accessible from, and the next `volctl reconcile` restores its claims here",
					pluginID, csi.EscapeControl(k), was, pluginID, was, shellquote.Arg(was))
			}
		}
	}
	return ""
}

// nodeTopologyWords says where a node is, by its plugin's NodeGetInfo accessible_topology.
func nodeTopologyWords(t map[string]string) string {
	if len(t) > 0 {
		return "is in " + formatSegments(t)
	}
	return "has no accessible topology"
}

// volumesOnNode lists, sorted, the volumes on the node (a live claim or a staging) that the
// node plugin serving pluginID holds: those of every plugin ID registered on its sockets
// (socketMates), which share its storage, its mounts and its max_volumes_per_node.
func volumesOnNode(tx *store.Tx, pluginID string) ([]string, error) {
	mates, err := socketMates(tx, pluginID)
	if err != nil {
		return nil, err
	}
	var on []string
	for _, id := range slices.Sorted(maps.Keys(mates)) {
		ids, err := tx.Volumes().OnNode(id)
		if err != nil {
			return nil, err
		}
		on = append(on, ids...)
	}
	slices.Sort(on)
	return on, nil
}

// nodeLimitWayOut says, for checkNode's max_volumes_per_node refusal, how each volume on the
// node (on, the first ten of them) may leave it: its claims at rest by the release command of
// each, pasteable; a volume none of whose claims is at rest by what it waits for: a claim or
// a release under way, another volctl's (two claims admitted from a fingerprint stating a
// higher limit than the restarted plugin's count each other, and each is refused: the other's
// claim, on its way in or being rolled back, is no claim to release), or left for reconcile;
// a staging left with no claim by reconcile, which unstages it. Before, the refusal said only
// "release one of them first", naming a volume whose claim another volctl was rolling back
// (TestNodeLimitRefusalSaysWhichVolumesAreOnTheirWay). Read on the refusal's path only.
func nodeLimitWayOut(tx *store.Tx, on []string) (string, error) {
	var release, moving, staged []string
	for _, id := range on[:min(len(on), 10)] {
		claims, err := tx.Claims().ByVolume(id)
		if err != nil {
			return "", err
		}
		switch {
		case slices.ContainsFunc(claims, store.Claim.AtRest):
			// Every claim of one volume, and any one volume: "a's claim (...) and b's claim (...); or c's claim (...)".
			release = append(release, strings.TrimPrefix(releaseThem(claims, "", store.Claim.AtRest), "release "))
		case len(claims) > 0:
			moving = append(moving, fmt.Sprintf("%q (`%s` shows where it is)", id, shellquote.Command("volctl volume status", id)))
		default:
			staged = append(staged, fmt.Sprintf("%q", id))
		}
	}
	var parts []string
	if len(release) > 0 {
		parts = append(parts, strings.Join(release, "; or "))
	}
	if len(moving) > 0 {
		parts = append(parts, fmt.Sprintf("volume(s) %s have no claim at rest: a claim or a release of theirs is under way (another volctl's, which may free its place: "+
			"claim again once it is done) or left for `volctl reconcile`", strings.Join(moving, ", ")))
	}
	if len(staged) > 0 {
		parts = append(parts, fmt.Sprintf("volume(s) %s are staged with no claim: `volctl reconcile` unstages them", strings.Join(staged, ", ")))
	}
	if len(parts) == 0 {
		return "", nil
	}
	return ": " + strings.Join(parts, "; "), nil
}

// nodeOutside reports, for a volume accessible from topos (none: everywhere), whether plugin
// p's node, as its recorded fingerprint states it, is in none of them: checkNode admits no new
// claim of the volume on this host then, and the volume lists reflect it (Schedulable false,
// OutsideTopology). A plugin never fingerprinted is not judged, nor one whose recorded topology
// fingerprinting would refuse (checkNode refuses its claims in its own words).
func nodeOutside(topos []spec.Topology, fp store.Fingerprint) bool {
	return len(topos) > 0 && judgedTopology(fp) && !topologyMatch(fp.Topology, topos)
}

// judgedTopology reports whether a fingerprint's node topology is one nodeOutside judges by.
func judgedTopology(fp store.Fingerprint) bool {
	return !fp.At.IsZero() && csi.CheckNodeTopology(fp.Provider, fp.Topology) == nil
}

// outsideWords says nodeOutside's verdict for `volume status`, and the way out: "accessible only
// from topology {zone=a}, and plugin "ebs"'s node "n1" is in {zone=b}: ...; restart the plugin
// with a topology the volume is accessible from".
func outsideWords(topos []spec.Topology, pluginID string, fp store.Fingerprint) string {
	return fmt.Sprintf("accessible only from topology %s, and plugin %q's node %q %s: no new claim of it is admitted on this host; %s",
		formatTopologies(topos), pluginID, fp.NodeID, nodeTopologyWords(fp.Topology), restartWords(pluginID, topos, fp.NodeID, fp.Topology))
}

// volumeTopologies is where a volume is accessible from: what CreateVolume reported, or for a
// registered volume its topology_request's required list (as Nomad takes it); none means
// everywhere.
func volumeTopologies(v store.Volume) []spec.Topology {
	if len(v.AccessibleTopology) > 0 {
		return v.AccessibleTopology
	}
	if v.TopologyRequest != nil {
		return v.TopologyRequest.Required
	}
	return nil
}

// topologyMatch reports whether a node with the given segments is in one of the topologies:
// every segment of that topology is one of the node's (Nomad's CSITopology.MatchFound). A
// node without topology matches none.
func topologyMatch(node map[string]string, topos []spec.Topology) bool {
	for _, t := range topos {
		if len(node) > 0 && segmentsWithin(t.Segments, node) {
			return true
		}
	}
	return false
}

// segmentsWithin reports whether every segment of a is in b with the same value.
func segmentsWithin(a, b map[string]string) bool { return spec.SegmentsWithin(a, b) }

// formatSegments words topology segments, which a plugin reported (NodeGetInfo, CreateVolume),
// with their control characters escaped: an escape sequence in a segment must not reach the
// terminal that shows the refusal.
func formatSegments(s map[string]string) string {
	parts := make([]string, 0, len(s))
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, segmentWord(k)+"="+segmentWord(s[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// segmentWord is a topology key or value as formatSegments words it: quoted when it is empty,
// holds what words a topology (=, a comma, a brace, a quote), a backslash or what must be
// escaped (a control or invisible character), or begins or ends with a space, so that two
// topologies never read alike: {k1="x, k2=y"} was worded {k1=x, k2=y}, as the node it was
// judged outside of (TestOutsideTopologyReasonDoesNotNameTwoDifferentTopologiesAlike), and a
// tab escaped read as a backslash and a t (TestOutsideTopologyReasonDoesNotNameATabAndABackslashTAlike).
func segmentWord(s string) string {
	if s == "" || strings.ContainsAny(s, "=,{}\"\\") || strings.TrimSpace(s) != s || csi.EscapeControl(s) != s {
		return strconv.Quote(s)
	}
	return s
}

func formatTopologies(ts []spec.Topology) string {
	parts := topologyWords(ts)
	if len(parts) == 1 {
		return parts[0]
	}
	return "one of " + strings.Join(parts, ", ")
}

// topologyWords is each of ts worded as formatSegments words it.
func topologyWords(ts []spec.Topology) []string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = formatSegments(t.Segments)
	}
	return parts
}

// describeIDs quotes up to ten volume IDs.
func describeIDs(ids []string) string {
	parts := make([]string, 0, len(ids))
	for i, id := range ids {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ids)-10))
			break
		}
		parts = append(parts, fmt.Sprintf("volume %q", id))
	}
	return strings.Join(parts, ", ")
}

// refuseStorageInUseElsewhere refuses a claim of volume v while another volume recorded here on
// the same storage holds it (recordedAgain: the same external ID through a plugin ID on one of
// the socket paths of v's plugin, one process, one storage), by live claims or a staging on
// this node, or while Nomad does (handed over). An ID spelled otherwise is not looked at:
// register lets a case-sensitive plugin hold "Data" beside "data" as two volumes. Registration
// and create refuse a second record of one storage (sameStorage), but one may be here anyway,
// recorded by an older volctl, or by two plugin IDs on sockets of their own before one of them
// was registered again on the other's socket (refuseJoinedStorage refuses that now). Each
// volume's claims are admitted against its own claims only, so a writer on each of the two
// (single-node-writer volumes) was admitted, each staged at its own path: a plugin that refuses
// a second staging of a volume, or a listing naming its attachment, stopped that only sometimes
// (`TestClaimOfOneStorageRecordedTwiceIsRefused`). A handover and an expand of v are refused the
// same way.
func refuseStorageInUseElsewhere(tx *store.Tx, v store.Volume) error {
	again, err := recordedAgain(tx, v)
	if err != nil {
		return err
	}
	for _, o := range again {
		same := fmt.Sprintf("volume %q records the storage of volume %q too (%s)", v.ID, o.ID, storageWords(v.ExternalID, o.PluginID, v.PluginID))
		forget := fmt.Sprintf("`%s` or `%s` forgets one of the two records and leaves the storage",
			shellquote.Command("volctl volume deregister", v.ID), shellquote.Command("volctl volume deregister", o.ID))
		live, err := tx.Claims().ByVolume(o.ID)
		if err != nil {
			return err
		}
		if len(live) > 0 {
			return &heldElsewhere{other: o.ID, err: conflictf("%s, which %s holds%s: one storage under two volume IDs, whose claims would ignore each other's access mode; "+
				"once it is released, %s", same, holder(live[0]), wayOut(live[0]), forget)}
		}
		if err := refuseHandedOver(tx, o.ID); err != nil {
			if !errors.Is(err, ErrConflict) {
				return err
			}
			return &heldElsewhere{other: o.ID, err: conflictf("%s, and %v: one storage under two volume IDs, which Nomad's claims of the one and volctl's of the other would share; %s",
				same, err, forget)}
		}
		_, err = tx.Stagings().Get(o.ID)
		switch {
		case err == nil:
			return &heldElsewhere{other: o.ID, err: conflictf("%s, which is still staged or attached on this node through it with no claim (`volctl reconcile` undoes that): "+
				"one storage under two volume IDs, whose claims would ignore each other's access mode; once it is undone, %s", same, forget)}
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	return nil
}

// storageWords says where two records of one storage name it: its external ID, through plugins
// a and b.
func storageWords(externalID, a, b string) string {
	return fmt.Sprintf("external ID %q, through plugin %q and plugin %q", spec.Cut(externalID, 256), a, b)
}

// recordedAgain returns the other volumes recorded here on volume v's storage: the same external
// ID through a plugin ID registered on one of the socket paths of v's plugin (pathMates),
// ordered by volume ID. Most volumes have none: the look is one indexed query of the storage
// key (NearExternalIDs), and the plugins are read only once a candidate is found.
func recordedAgain(tx *store.Tx, v store.Volume) ([]store.VolumeExternalID, error) {
	if v.ExternalID == "" {
		return nil, nil
	}
	near, err := tx.Volumes().NearExternalIDs(v.ExternalID)
	if err != nil {
		return nil, err
	}
	var (
		mates map[string]bool
		out   []store.VolumeExternalID
	)
	for _, o := range near {
		if o.ID == v.ID || o.ExternalID != v.ExternalID {
			continue
		}
		if mates == nil {
			if mates, err = pathMates(tx, v.PluginID); err != nil {
				return nil, err
			}
		}
		if mates[o.PluginID] {
			out = append(out, o)
		}
	}
	return out, nil
}

// heldElsewhere is refuseStorageInUseElsewhere's refusal (err, a conflict), naming the other
// volume that holds the storage.
type heldElsewhere struct {
	other string
	err   error
}

func (h *heldElsewhere) Error() string { return h.err.Error() }
func (h *heldElsewhere) Unwrap() error { return h.err }
