package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// Facts the engine derives from what it returns, as typed values, so the command line and the
// dashboard word them alike: a plugin's health, why a volume cannot take claims, a claim's
// state with its notes. Each has one String, its word; the faces style it, never reword it.

// PluginHealth is a plugin's health in one word.
type PluginHealth string

const (
	PluginUnknown   PluginHealth = "unknown"   // never probed: nothing is known yet
	PluginHealthy   PluginHealth = "healthy"   // answered its last probe, ready
	PluginNotReady  PluginHealth = "not ready" // answered, but its Probe says not ready
	PluginUnhealthy PluginHealth = "unhealthy" // its last probe failed
)

func (h PluginHealth) String() string { return string(h) }

// OK reports whether claims on the plugin's volumes can go ahead.
func (h PluginHealth) OK() bool { return h == PluginHealthy }

// ProbeHealth words one probe's answer: it answered (healthy) and said it is ready.
func ProbeHealth(healthy, ready bool) PluginHealth {
	switch {
	case !healthy:
		return PluginUnhealthy
	case !ready:
		return PluginNotReady
	}
	return PluginHealthy
}

// Health is the plugin's health as its last probe left it.
func (p PluginInfo) Health() PluginHealth { return recordedHealth(p.Healthy, p.Ready, p.ProbedAt) }

// recordedHealth is the health a plugin's record says: unknown before its first probe, else
// what that probe's answer words.
func recordedHealth(healthy, ready bool, probedAt time.Time) PluginHealth {
	if !healthy && probedAt.IsZero() {
		return PluginUnknown
	}
	return ProbeHealth(healthy, ready)
}

// HealthWhy says why the plugin is not healthy ("" when it is): its last error, or that it
// has not been probed yet; and, when an agent is starting it again, what became of its last
// start (its command not found, its process exited: Supervision.Words), which the error, a
// socket that does not exist "(is the plugin running?)", cannot say.
func (p PluginInfo) HealthWhy() string {
	why := p.healthWhy()
	if s := p.Supervision; s != nil && !s.AgentGone && (s.Mode == SupervisionStartFailed || s.Mode == SupervisionExited) {
		if h := p.Health(); h == PluginUnhealthy || h == PluginUnknown {
			why += "; " + s.Words()
		}
	}
	return why
}

func (p PluginInfo) healthWhy() string {
	switch h := p.Health(); {
	case h == PluginHealthy:
		return ""
	case p.LastError != "":
		return p.LastError
	case h == PluginUnknown:
		return "not probed yet"
	case h == PluginNotReady:
		return "its Probe says it is not ready"
	}
	return "its last probe failed"
}

// UnpublishOwed says a ControllerUnpublishVolume is owed to the node the volume is recorded
// attached to (AttachedTo): no claim holds the attachment. A forced detach that could not send
// it leaves that, and reconcile sends it; so does the last local claim of a volume handed over
// to Nomad (Handover set), whose attachment is kept until the volume is taken back
// (keptForNomad). Deregistering the volume or its plugin refuses to forget it meanwhile.
func (v VolumeInfo) UnpublishOwed() bool { return v.AttachedTo != "" && len(v.Claims) == 0 }

// UnpublishWay says what sends the ControllerUnpublishVolume owed (UnpublishOwed) through the
// volume's plugin as its record has it, as the refusals say it: reconcile once the plugin
// answers; the plugin started with PUBLISH_UNPUBLISH_VOLUME (or its controller half registered)
// first; or the plugin registered again. A sentence, capitalised. The views said "reconcile
// sends it" of a plugin that had lost the capability, whose reconcile sends nothing
// (TestVolumeStatusOfAnAttachmentItsPluginCannotUnpublishDoesNotPromiseReconcile).
func (v VolumeInfo) UnpublishWay() string {
	if v.unpublishWay == "" {
		return fmt.Sprintf("Run `volctl reconcile` once plugin %q answers (it sends it)", v.PluginID)
	}
	return v.unpublishWay
}

// setUnpublishWay sets what sends the volume's owed unpublish through its plugin's record p
// (known false: not registered), for an attachment recorded with no node (rowNoNode) or one.
func (v *VolumeInfo) setUnpublishWay(p store.Plugin, known, rowNoNode bool) {
	v.unpublishWay = owedUnpublishWayOf(v.PluginID, p, known, rowNoNode)
	v.unpublishBlock = ""
	if !known {
		v.unpublishBlock = blockedAfterTakeBack(fmt.Sprintf("plugin %q is not registered (deregistered with --force)", v.PluginID), "register it again")
	} else if why, fix, blocked := recordedUnpublishBlock(p, rowNoNode); blocked {
		v.unpublishBlock = blockedAfterTakeBack(why, fix)
	}
}

// owedUnpublishWaits is VolumeInfo.UnpublishWaits of v: what sends its owed
// ControllerUnpublishVolume, "" when none is owed.
func owedUnpublishWaits(v VolumeInfo) string {
	switch {
	case !v.UnpublishOwed():
		return ""
	case v.Handover != nil:
		return fmt.Sprintf("The ControllerUnpublishVolume owed waits for the volume to be taken back from Nomad at %s (`%s`), then `volctl reconcile` sends it%s",
			v.Handover.Address, shellquote.Command("volctl nomad release", v.ID), v.unpublishBlock)
	}
	return v.UnpublishWay()
}

// UnpublishWaitsClause is UnpublishWaits to follow a colon: its first letter lower-cased (its
// sentences begin with an ASCII word).
func (v VolumeInfo) UnpublishWaitsClause() string {
	if w := v.UnpublishWaits; w != "" {
		return strings.ToLower(w[:1]) + w[1:]
	}
	return ""
}

// UnpublishBlockAfterTakeBack is what an owed unpublish of a volume handed over to Nomad needs
// besides the take-back, as its plugin's record has it ("" when nothing: the plugin can be
// sent it), a clause to follow the take-back's words.
func (v VolumeInfo) UnpublishBlockAfterTakeBack() string { return v.unpublishBlock }

// PluginHealth is the health of the volume's plugin as the volume's read found it.
func (v VolumeInfo) PluginHealth() PluginHealth {
	switch {
	case !v.PluginHealthy && v.PluginError == "":
		return PluginUnknown
	case !v.PluginHealthy:
		return PluginUnhealthy
	case !v.PluginReady:
		return PluginNotReady
	}
	return PluginHealthy
}

// Unschedulable is why a volume cannot take claims.
type Unschedulable string

const (
	Schedulable         Unschedulable = ""
	VolumeCreating      Unschedulable = "creating"  // its create has not finished
	VolumeDeleting      Unschedulable = "deleting"  // its delete has begun
	VolumeNotReady      Unschedulable = "not ready" // another state that is not ready
	PluginNotRegistered Unschedulable = "plugin not registered"
	PluginDown          Unschedulable = "plugin unhealthy"
	PluginNotProbed     Unschedulable = "plugin not probed yet"
	PluginUnready       Unschedulable = "plugin not ready"     // its Probe answers, saying not ready
	HandedOver          Unschedulable = "handed over to Nomad" // Nomad is its orchestrator now
	// OutsideTopology: its plugin's node is in none of the topologies the volume is
	// accessible from (a host renamed, a plugin started with another node ID or zone).
	OutsideTopology Unschedulable = "outside its topology"
)

// Schedulability is whether a volume can take claims and, when not, why.
type Schedulability struct {
	Why    Unschedulable
	Plugin string // the volume's plugin, for the words
	Detail string // the plugin's error, when it is the cause; the Nomad address, handed over
}

// OK reports whether the volume can take claims.
func (s Schedulability) OK() bool { return s.Why == Schedulable }

// String is the cell: "yes", "no: deleting", "no: plugin unhealthy".
func (s Schedulability) String() string {
	if s.OK() {
		return "yes"
	}
	return "no: " + string(s.Why)
}

// Sentence says it in a line: "plugin "ceph" is unhealthy: Probe: Unavailable: ...".
func (s Schedulability) Sentence() string {
	switch s.Why {
	case Schedulable:
		return "it can take claims"
	case VolumeCreating, VolumeDeleting, VolumeNotReady:
		return "the volume is " + string(s.Why) + ", not ready"
	case PluginNotRegistered:
		return "its plugin " + quote(s.Plugin) + " is not registered"
	case PluginNotProbed:
		return "its plugin " + quote(s.Plugin) + " has not been probed healthy yet"
	case PluginUnready:
		return "its plugin " + quote(s.Plugin) + " is not ready: its Probe answers, saying so (still starting, or waiting for what it needs)"
	case HandedOver:
		return "it is handed over to the Nomad cluster at " + s.Detail + ", which claims it now"
	case OutsideTopology:
		if s.Detail == "" {
			return "its plugin " + quote(s.Plugin) + "'s node is in none of the topologies it is accessible from: no new claim of it is admitted on this host"
		}
		return "it is " + s.Detail
	}
	if s.Detail != "" {
		return "its plugin " + quote(s.Plugin) + " is unhealthy: " + s.Detail
	}
	return "its plugin " + quote(s.Plugin) + " is unhealthy"
}

func quote(s string) string { return `"` + s + `"` }

func stateReason(state string) Unschedulable {
	switch state {
	case "", "ready":
		return Schedulable
	case "creating":
		return VolumeCreating
	case "deleting":
		return VolumeDeleting
	}
	return VolumeNotReady
}

// Schedulability says whether the volume can take claims. plugin is its plugin as the same read
// found it, nil when it is not registered (or not known to the caller: then an unschedulable
// volume of a ready state is blamed on its plugin's health).
func (v VolumeSummary) Schedulability(plugin *PluginInfo) Schedulability {
	s := Schedulability{Why: stateReason(v.State), Plugin: v.PluginID}
	if !s.OK() || v.Schedulable {
		return s
	}
	if v.handedTo != "" {
		s.Why, s.Detail = HandedOver, ShownNomadAddress(v.handedTo)
		return s
	}
	switch {
	case plugin != nil:
		s.Detail = plugin.LastError
		s.Why = healthWhy(plugin.Health())
	case v.pluginWhy != "":
		s.Why = v.pluginWhy
	case !v.outside:
		s.Why = PluginDown
	}
	if s.Why == Schedulable && v.outside {
		// Its plugin takes claims: the topology is what keeps them out.
		s.Why, s.Detail = OutsideTopology, v.outsideWords
	}
	return s
}

// healthWhy is why a plugin of health h takes no claims.
func healthWhy(h PluginHealth) Unschedulable {
	switch h {
	case PluginHealthy:
		return Schedulable
	case PluginUnknown:
		return PluginNotProbed
	case PluginNotReady:
		return PluginUnready
	}
	return PluginDown
}

// WithPluginProbed is v with Schedulable as plugin's health says, plugin being what a live
// probe found (PluginStatus), which a read command may not have been able to record: the
// volume's summary was read with the health last recorded. plugin nil is its plugin not
// registered.
func (v VolumeSummary) WithPluginProbed(plugin *PluginInfo) VolumeSummary {
	v.Schedulable = stateReason(v.State) == Schedulable && plugin != nil && plugin.Health() == PluginHealthy && !v.outside && v.handedTo == ""
	// And why not, as that probe found it: the reason was the one the read found recorded,
	// "no: plugin not ready" on the row of a volume whose plugin the same screen showed
	// unhealthy (TestVolumeRowIsWordedByThePluginsProbe).
	v.pluginWhy = PluginNotRegistered
	if plugin != nil {
		v.pluginWhy = healthWhy(plugin.Health())
	}
	return v
}

// WithPluginProbed is v with its plugin's health as a live probe found it (plugin: what
// PluginStatus returned of it), where that reading is newer than the one v was read with (the
// probe may not have been able to record it), and whether it can take claims as that health
// says: the dashboard's volume detail says what its list says (Dashboard.WithPluginsProbed).
// A plugin not registered when v was read is left as v says.
func (v VolumeInfo) WithPluginProbed(plugin *PluginInfo) VolumeInfo {
	if plugin == nil || plugin.Key() != v.PluginKey() || v.pluginProbedAt.IsZero() || !plugin.ProbedAt.After(v.pluginProbedAt) {
		return v
	}
	v.PluginHealthy, v.PluginReady, v.PluginError, v.pluginProbedAt = plugin.Healthy, plugin.Ready, plugin.LastError, plugin.ProbedAt
	v.VolumeSummary = v.VolumeSummary.WithPluginProbed(plugin)
	return v
}

// Schedulability says whether the volume can take claims, from its own read.
func (v VolumeInfo) Schedulability() Schedulability {
	s := Schedulability{Why: stateReason(v.State), Plugin: v.PluginID}
	if !s.OK() || v.Schedulable {
		return s
	}
	if v.Handover != nil {
		s.Why, s.Detail = HandedOver, ShownNomadAddress(v.Handover.Address)
		return s
	}
	if v.outside && v.PluginHealth() == PluginHealthy {
		s.Why, s.Detail = OutsideTopology, v.outsideWords
		return s
	}
	switch {
	case strings.HasSuffix(v.PluginError, "is not registered"):
		s.Why = PluginNotRegistered
	case v.PluginHealth() == PluginNotReady:
		s.Why = PluginUnready
	case v.PluginError == "":
		s.Why = PluginNotProbed
	default:
		s.Why, s.Detail = PluginDown, v.PluginError
	}
	return s
}

// ClaimCondition is a claim's state with the notes that qualify it, in a fixed order:
// degraded, releasing (unless the state already says it), needs reconcile, target covered.
type ClaimCondition struct {
	State string
	Notes []string
}

// String is "published", or "node-staged (releasing, needs reconcile)".
func (c ClaimCondition) String() string {
	if len(c.Notes) == 0 {
		return c.State
	}
	return c.State + " (" + strings.Join(c.Notes, ", ") + ")"
}

// Condition is the claim's state with its notes.
func (c ClaimInfo) Condition() ClaimCondition {
	cc := ClaimCondition{State: c.State}
	if c.Degraded {
		cc.Notes = append(cc.Notes, "degraded")
	}
	// The release path's own states say it is being released.
	if c.Releasing && store.ClaimState(c.State).IsPublishPath() {
		cc.Notes = append(cc.Notes, "releasing")
	}
	if c.NeedsReconcile {
		cc.Notes = append(cc.Notes, "needs reconcile")
	}
	switch {
	case c.TargetUnmounted:
		cc.Notes = append(cc.Notes, "target unmounted")
	case c.Covered != "":
		cc.Notes = append(cc.Notes, "target covered")
	}
	return cc
}

// LastErrorText is the claim's last error with the RPC and code that gave it:
// "NodePublishVolume: Unavailable: connection refused"; empty when it has none. The error an
// RPC failed with names them already (csi.Error reads "RPC: Code: message (hint)"), and so
// does most of what recordFailure keeps: those are not said twice (the dashboard's claims read
// "NodePublishVolume: Unavailable: NodePublishVolume: Unavailable: nothing is listening ...").
// A target found covered (Covered) is said in its place.
func (c ClaimInfo) LastErrorText() string {
	if c.Covered != "" {
		// A covered target is the problem now, whatever failed before: said as reconcile says it.
		return c.Covered
	}
	if c.LastError == "" {
		return ""
	}
	head := c.LastRPC
	if c.LastCode != "" {
		head = strings.TrimPrefix(head+": "+c.LastCode, ": ")
	}
	switch {
	case head == "", strings.HasPrefix(c.LastError, head+": "):
		return c.LastError
	case c.LastRPC != "" && strings.HasPrefix(c.LastError, c.LastRPC+": "):
		return c.LastError // the RPC named, its failure in other words than the code's
	}
	return head + ": " + c.LastError
}

// takesClaims says whether a plugin's last probe lets its volumes take claims: it answered,
// and said ready. A plugin whose Probe says not ready is not healthy (PluginNotReady), and
// Nomad's scheduler places no claim on a node whose plugin says so.
func takesClaims(h store.Health) bool { return h.Healthy && h.Ready }

// spelledAsNode is topos with each key spelled as node (a plugin's node's topology, as its
// fingerprint states it) spells it where the two differ only in case, and the topology has no
// key of the node's spelling already: the same key to the CSI spec and to volctl's matching
// (spec.SegmentsWithin folds keys), but not to Nomad, whose scheduler compares a volume's
// topology keys with the node's fingerprint byte for byte. A create's answer is recorded so
// (recordCreated): a volume schedulable here, answered {Zone=a} for a node in {zone=a}, was
// exported and handed over as placeable on no node
// (TestExportNomadOfAVolumeAnsweredWithAFoldedTopologyKeyIsPlaceableByNomad). Respelled when
// read instead, what was sent to Nomad changed with the plugin's record: once the plugin was
// deregistered, `nomad status` said the copy differed, and a registration again was refused
// (TestNomadStatusOfAHandedOverVolumeDoesNotDriftWhenItsPluginIsDeregistered).
func spelledAsNode(topos []spec.Topology, node map[string]string) []spec.Topology {
	// alone says key k is the only key of segs of its fold: two ({Zone=a, ZONE=b}, which
	// `volume register` warns of and matches as written) were both renamed to the node's one
	// and merged, the volume then schedulable where it was not
	// (TestPluginRegistrationDoesNotMergeARegisteredVolumesTopologyKeys).
	alone := func(segs map[string]string, k string) bool {
		n := 0
		for o := range segs {
			if strings.EqualFold(o, k) {
				n++
			}
		}
		return n == 1
	}
	if len(node) == 0 || len(topos) == 0 {
		return topos
	}
	out := make([]spec.Topology, len(topos))
	for i, t := range topos {
		segs := make(map[string]string, len(t.Segments))
		for k, val := range t.Segments {
			if _, ok := node[k]; !ok && alone(t.Segments, k) {
				for nk := range node {
					if _, taken := t.Segments[nk]; strings.EqualFold(nk, k) && !taken {
						k = nk
						break
					}
				}
			}
			segs[k] = val
		}
		out[i] = spec.Topology{Segments: segs}
	}
	return out
}
