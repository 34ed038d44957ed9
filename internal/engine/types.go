package engine

import (
	"cmp"
	"fmt"
	"github.com/volctl/volctl/internal/shellquote"
	"strconv"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// The values the engine returns. Their JSON forms are volctl's --json contract
// (docs/json.md): add fields freely, never rename or remove one.

// PluginInfo is a registered plugin: its declaration, last fingerprint and health.
type PluginInfo struct {
	ID               string          `json:"id"`
	Type             spec.PluginType `json:"type"`
	ControllerSocket string          `json:"controller_socket,omitempty"`
	NodeSocket       string          `json:"node_socket,omitempty"`
	// Supervised: run by the agent: an exec plugin it has not found served by a process it did
	// not start, or an ID without an exec block on the socket of one whose process it runs.
	Supervised      bool              `json:"supervised"`
	Provider        string            `json:"provider"`
	Version         string            `json:"version"`
	NodeID          string            `json:"node_id,omitempty"`
	MaxVolumes      int64             `json:"max_volumes"`
	Topology        map[string]string `json:"topology,omitempty"`
	Capabilities    CapabilityNames   `json:"capabilities"`
	Healthy         bool              `json:"healthy"`
	Ready           bool              `json:"ready"`
	ProbeLatency    Duration          `json:"probe_latency_ms"`
	LastError       string            `json:"last_error,omitempty"`
	ProbedAt        time.Time         `json:"probed_at,omitzero"`
	FingerprintedAt time.Time         `json:"fingerprinted_at,omitzero"`
	Volumes         int               `json:"volumes"` // registered volumes using the plugin
	// CapabilityChange is the plugin's last change of capabilities (a restart with others), as
	// its record keeps it (store.Plugin.CapabilityChange), however long ago; absent when none.
	CapabilityChange *CapabilityChange `json:"capability_change,omitempty"`
	// Supervision is what the agent last recorded it does with the plugin's process (runs it,
	// follows its daemon, probes it only, stopped it, left it running), and so whether it can
	// stop and restart it; absent when no agent has recorded anything.
	Supervision *Supervision `json:"supervision,omitempty"`
	// noExec: the plugin has no exec block (Supervised only while an agent runs its socket's
	// process as another ID's: agentLiveness).
	noExec bool
	key    string // ID as read (Key)
}

// Key is the plugin's ID as the state has it, to look it up by: ID is what is shown, and a
// scrub of secrets (Dashboard, RedactValue) replaces a secret value in it as anywhere, which
// leaves the unexported key alone. An ID holding another record's secret value ("admin-csi", a
// secret "admin") was looked up as "[REDACTED]-csi", which names nothing
// (TestVolumeWhoseIDHoldsASecretCanBeOpenedAndActedOn). ID when the info was not read by the
// engine.
func (p PluginInfo) Key() string { return cmp.Or(p.key, p.ID) }

// What an agent does with a plugin's process (Supervision.Mode), as the store records it.
const (
	SupervisionRuns    = store.SupervisionRuns    // it started the process, or adopted one an agent started
	SupervisionDaemon  = store.SupervisionDaemon  // it follows the daemon the process left serving the socket
	SupervisionProbed  = store.SupervisionProbed  // it probes the plugin only, never signalling what serves it
	SupervisionStopped = store.SupervisionStopped // it stopped the process at its own stop
	SupervisionLeft    = store.SupervisionLeft    // it stopped, leaving the process running
	// it could not start the process, and tries again after a backoff
	SupervisionStartFailed = store.SupervisionStartFailed
	SupervisionExited      = store.SupervisionExited // the process it ran exited; it starts it again after a backoff
)

// Supervision is what an agent recorded it does with a plugin's process (store.Supervision).
type Supervision struct {
	// Mode is "runs" (the agent started the process, or adopted one an agent started),
	// "daemon" (it follows the daemon the process it started left serving the socket),
	// "probed" (it probes the plugin only, never signalling what serves its socket), "stopped"
	// (it stopped the process at its own stop), "left" (it stopped, leaving the process
	// running: mounts, or a stop that failed), "start-failed" (it could not start the process,
	// Note saying why, and tries again after a backoff) or "exited" (the process it ran
	// exited, Note its exit status, and it starts it again after a backoff).
	Mode string `json:"mode"`
	Pid  int    `json:"pid,omitempty"` // the process it runs, follows, probes or left
	Note string `json:"note,omitempty"`
	// CanStop and CanRestart say what the agent does with the process: both true while it runs
	// it or follows its daemon, false for one it probes only (and for one no agent runs now);
	// CanRestart alone while it starts the plugin again ("start-failed", "exited").
	CanStop    bool      `json:"can_stop"`
	CanRestart bool      `json:"can_restart"`
	AgentPid   int       `json:"agent_pid,omitempty"` // the agent that recorded it
	At         time.Time `json:"at"`
	// AgentGone is true when the record says the agent runs, follows or probes the process
	// ("runs", "daemon", "probed") and the agent that recorded it holds the state dir's agent
	// lock no more: it was killed (SIGKILL, a crash, the host's OOM killer) before it could
	// record its stop, so no agent does what the record says (CanStop and CanRestart are false).
	// Told by the lock, which the kernel drops with its holder, not by the pid, which it may
	// have given to any process since (agentLiveness).
	AgentGone bool `json:"agent_gone,omitempty"`
	// AgentNow is the agent that holds the agent lock now, when AgentGone: started since, it
	// records what it does with the process at its first probe of the plugin. 0 when none runs.
	AgentNow int `json:"agent_now_pid,omitempty"`
	// AgentGoneBy is, when AgentGone, a time the agent that recorded it was gone by: when the
	// agent holding the lock now wrote run/agent.pid, which it does only once it has taken the
	// lock, which the kernel gave it only once the other was dead. Zero when no agent holds the
	// lock, or its pid file does not name it. When it died is not recorded anywhere (SIGKILL
	// leaves no trace, flock(2) does not touch the lock file): At, when it was alive, and this
	// bound are what can be said (agentLiveness).
	AgentGoneBy time.Time `json:"agent_gone_by,omitzero"`
	// noExec: the plugin has no exec block now, so no agent adopts a process it left (Words).
	noExec bool
}

// backoffWords says how long the agent waits to start a plugin again, which its config may
// bound otherwise than by default (restart_backoff_max): before, "up to a minute" whatever it
// said (TestSupervisionWordsNameTheConfiguredBackoff).
const backoffWords = "(doubling, up to the agent's restart_backoff_max: a minute unless its config sets another)"

// Words says what the agent does with the process, for plugin status and the dashboard: "the
// agent runs it (pid 12): stops and restarts it".
func (s *Supervision) Words() string {
	pid := ""
	if s.Pid > 0 {
		pid = " (pid " + strconv.Itoa(s.Pid) + ")"
	}
	note := ""
	if s.Note != "" {
		note = ": " + s.Note
	}
	if s.AgentGone {
		return s.goneWords(pid)
	}
	switch s.Mode {
	case store.SupervisionRuns:
		return "the agent runs it" + pid + note + "; it restarts it when it exits, and stops it at its own stop or to restart it when it stays unhealthy, never while it has mounts"
	case store.SupervisionDaemon:
		return "the agent follows its daemon" + pid + ", left serving its socket by the process it started" + note + "; it restarts the plugin when it exits, and stops it at its own stop or to restart it when it stays unhealthy, never while it has mounts"
	case store.SupervisionProbed:
		return "the agent probes it only, never stopping or restarting it" + pid + note
	case store.SupervisionStopped:
		if s.Pid == 0 && s.Note != "" {
			return "the agent stopped" + note + "; nothing runs it until an agent starts"
		}
		return "the agent stopped it" + pid + " at its own stop; nothing runs it until an agent starts"
	case store.SupervisionStartFailed:
		return "the agent cannot start it" + note + "; it tries again after a backoff " + backoffWords + ", and its log and events say each try"
	case store.SupervisionExited:
		return "its process" + pid + " exited" + note + "; the agent starts it again after a backoff " + backoffWords
	case store.SupervisionLeft:
		if s.noExec {
			// Its exec block removed since (a plugin register without one), or never its own
			// (an ID on the socket of one deregistered): no agent adopts a process for it.
			return "the agent stopped, leaving it running" + pid + note + "; nothing supervises it, and no agent will: the plugin has no exec block"
		}
		return "the agent stopped, leaving it running" + pid + note + "; nothing supervises it until the next agent adopts it"
	}
	return s.Mode + pid + note
}

// goneWords says what is true of a record whose agent is gone (AgentGone): "no agent runs it: the
// agent that ran it (pid 12), pid 77, is gone, killed before it could record its stop; ...".
func (s *Supervision) goneWords(pid string) string {
	did := "ran it" + pid
	none := "no agent runs it"
	switch s.Mode {
	case store.SupervisionDaemon:
		did, none = "followed its daemon"+pid, "no agent follows its daemon"
	case store.SupervisionStartFailed, store.SupervisionExited:
		did, none = "was starting it", "no agent starts it"
	case store.SupervisionProbed:
		did, none = "probed it"+pid, "no agent probes it"
	}
	agent := "the agent that " + did
	if s.AgentPid > 0 {
		agent += ", pid " + strconv.Itoa(s.AgentPid) + ","
	}
	w := none + ": " + agent + " is gone (it holds the state dir's agent lock no more: killed before it could record its stop; " +
		"it was alive when it made this record, and when it died is not recorded"
	if !s.AgentGoneBy.IsZero() {
		w += ", but it was gone by the time the agent running now took the lock"
	}
	w += ")"
	switch s.Mode {
	case store.SupervisionProbed:
	case store.SupervisionStartFailed, store.SupervisionExited:
		w += "; nothing starts the plugin"
	default:
		w += "; nothing stops or restarts the process, which may still run"
	}
	if s.AgentNow > 0 {
		return w + "; the agent running now (pid " + strconv.Itoa(s.AgentNow) + ") has not recorded what it does with it yet"
	}
	return w + "; the next agent on this state dir takes it up"
}

// CapabilityChange is what a plugin lost and gained when it came back with other capabilities,
// and when: Capabilities is what it has now, this what changed to make it so.
type CapabilityChange struct {
	At     time.Time `json:"at"`
	Lost   []string  `json:"lost"`
	Gained []string  `json:"gained"`
}

// CapabilityNames are a plugin's capabilities by CSI name, per service.
type CapabilityNames struct {
	Plugin     []string `json:"plugin"`
	Controller []string `json:"controller"`
	Node       []string `json:"node"`
}

// Duration marshals as milliseconds with a fraction, which scripts can compare.
type Duration time.Duration

// MarshalJSON writes the duration in milliseconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(formatFloat(float64(d) / float64(time.Millisecond))), nil
}

// String renders the duration for tables, rounded as display.Latency does: "1.2ms", "5.0s".
func (d Duration) String() string { return display.Latency(time.Duration(d)) }

// VolumeSummary is one row of the volume list.
type VolumeSummary struct {
	ID             string              `json:"id"`
	Namespace      string              `json:"namespace"`
	Name           string              `json:"name"`
	PluginID       string              `json:"plugin_id"`
	State          string              `json:"state"` // creating | ready | deleting
	Schedulable    bool                `json:"schedulable"`
	AccessMode     spec.AccessMode     `json:"access_mode,omitempty"`     // current, set by the first live claim
	AttachmentMode spec.AttachmentMode `json:"attachment_mode,omitempty"` // likewise
	CapacityBytes  int64               `json:"capacity_bytes"`
	ReadClaims     int                 `json:"read_claims"`
	WriteClaims    int                 `json:"write_claims"`
	Unsettled      int                 `json:"unsettled_claims"` // claims not at rest
	// CreatedAt is when volctl recorded the volume: with its ID, which record it is. A volume
	// deleted and created again under the same ID is another record, with new storage, and a
	// list drawn before that must not act on it (the dashboard's questions compare it).
	CreatedAt time.Time `json:"created_at"`
	// pluginWhy is why its plugin takes no claims, as a list that read the plugins found it
	// (eachVolume); "" when not known there. Schedulability(nil) words it.
	pluginWhy Unschedulable
	// outside: its plugin's node, as its recorded fingerprint states it, is in none of the
	// topologies the volume is accessible from, and no new claim of it is admitted on this host
	// (checkNode); Schedulable is false. outsideWords says it, where the read had the volume's
	// row (VolumeInfo).
	outside      bool
	outsideWords string
	// unpublishWay says what sends a ControllerUnpublishVolume owed for the volume, as its
	// plugin's record has it (owedUnpublishWay), where the read had the plugin's record:
	// VolumeInfo.UnpublishWay.
	unpublishWay string
	// unpublishBlock is blockedAfterTakeBack's words of the plugin's record, "" when it can
	// be sent the unpublish: what a handed-over volume's owed unpublish needs besides the
	// take-back (owedUnpublishWaits).
	unpublishBlock string
	// handedTo is the Nomad address the volume is handed over to ("" when it is not): Nomad
	// claims it, not volctl, and Schedulable is false (refuseHandedOver). Before, only volume
	// status read the handovers, and the lists said "yes" of such a volume
	// (TestHandedOverVolumeIsListedAsNotSchedulable).
	handedTo string
	// key and pluginKey are ID and PluginID as read (Key, PluginKey).
	key, pluginKey string
	// leftover: the volume has no claim but still records a staging or an attachment, which
	// a plain detach undoes (detachLeft), and is not handed over to Nomad; set by the
	// dashboard's read and a volume's.
	leftover bool
	// owesExpansion: an expansion of the volume is owed, not handed over to Nomad: a
	// ControllerExpandVolume whose answer is not recorded, or a NodeExpandVolume (`volctl status`
	// lists both owed; set by the lists' read, listedSummary).
	owesExpansion bool
}

// Leftover reports whether the volume, with no claim, still records a staging or attachment
// that a detach undoes (the dashboard offers its detach then).
func (s VolumeSummary) Leftover() bool { return s.leftover }

// OwesExpansion reports whether an expansion of the volume is owed (a ControllerExpandVolume
// whose answer is not recorded, or a NodeExpandVolume), as `volctl status` lists it: the
// dashboard drew such a volume all well (TestDashboardVolumeOwedAnExpansionIsNotDrawnAllWell).
func (s VolumeSummary) OwesExpansion() bool { return s.owesExpansion }

// HandedOver reports whether the volume is handed over to Nomad, which claims it, not volctl.
func (s VolumeSummary) HandedOver() bool { return s.handedTo != "" }

// Key is the volume's ID as the state has it, to look it up and act on it by; ID is what is
// shown, scrubbed of secrets where the read was (PluginInfo.Key says why).
func (s VolumeSummary) Key() string { return cmp.Or(s.key, s.ID) }

// PluginKey is PluginID as the state has it (Key).
func (s VolumeSummary) PluginKey() string { return cmp.Or(s.pluginKey, s.PluginID) }

// VolumeInfo is everything volctl knows about one volume, as `volume status ID` shows it.
type VolumeInfo struct {
	VolumeSummary
	ExternalID         string                `json:"external_id"`
	CSIName            string                `json:"csi_name,omitempty"`
	Provider           string                `json:"provider"`
	ProviderVersion    string                `json:"provider_version"`
	PluginHealthy      bool                  `json:"plugin_healthy"`
	PluginReady        bool                  `json:"plugin_ready"`
	PluginError        string                `json:"plugin_error,omitempty"`
	RequestedMin       int64                 `json:"capacity_min,omitempty"`
	RequestedMax       int64                 `json:"capacity_max,omitempty"`
	Capabilities       []spec.Capability     `json:"capabilities"`
	MountOptions       *spec.MountOptions    `json:"mount_options,omitempty"`
	MountAllows        []string              `json:"mount_allows,omitempty"` // which of suid, dev, exec its mount flags ask for (spec.MountFlags.Allows)
	TopologyRequest    *spec.TopologyRequest `json:"topology_request,omitempty"`
	AccessibleTopology []spec.Topology       `json:"topologies,omitempty"`
	Secrets            spec.Secrets          `json:"secrets,omitempty"` // keys only; values redacted
	Parameters         map[string]string     `json:"parameters,omitempty"`
	Context            map[string]string     `json:"context,omitempty"`
	SnapshotID         string                `json:"snapshot_id,omitempty"`
	CloneID            string                `json:"clone_id,omitempty"`
	Staged             bool                  `json:"staged"`
	// StagingLeft is the volume's staging path when no staging is recorded there (Staged false)
	// while the mount table has something mounted at it: a plugin answered NodeUnstageVolume OK
	// and left its mount (the release waits for it to be unmounted), or a NodeStageVolume's
	// answer is not recorded yet (one in flight, or killed). Empty otherwise, and always for a
	// volume whose staging is recorded done or undone.
	StagingLeft string `json:"staging_left,omitempty"`
	// SameStorage are the other volumes recorded here on this one's storage (the same external ID
	// through a plugin ID on the same socket: one storage under two IDs, which an older volctl
	// may have recorded), each "ID (plugin P)"; a claim, handover or expand of either is refused
	// while the other holds it. Empty for every volume but such a pair's.
	SameStorage []string `json:"same_storage,omitempty"`
	// AttachedTo is the node volctl recorded the volume controller-published to (attached),
	// while that record stands; with no claim holding it, ControllerUnpublishVolume is owed
	// (a forced detach could not send it) and reconcile sends it.
	AttachedTo string `json:"attached_to,omitempty"`
	// UnpublishWaits says, with AttachedTo and no claim (UnpublishOwed), what sends the
	// ControllerUnpublishVolume owed: the take-back from Nomad of a volume handed over, else
	// UnpublishWay's words. Only the text said it before; a script read attached_to alone
	// (TestVolumeStatusJSONSaysWhatSendsAnOwedUnpublish). Empty when none is owed.
	UnpublishWaits string `json:"unpublish_waits,omitempty"`
	// NodeExpansionOwed is the size a NodeExpandVolume owed to this node asks for, 0 when
	// none is: the filesystem may still be the old size until it is sent.
	NodeExpansionOwed int64 `json:"node_expansion_owed,omitempty"`
	// NodeExpansionWaits says, with NodeExpansionOwed, why that expansion is not done yet and
	// what does it (owedExpansionWaits): the volume on no path here (the next publish), a
	// plugin that expands only offline while the volume is on the node (its release), a
	// controller half not registered, a node without EXPAND_VOLUME. Empty when none is owed.
	NodeExpansionWaits string `json:"node_expansion_waits,omitempty"`
	// ExpansionPending is the size a ControllerExpandVolume asked for whose answer is not
	// recorded (the expand was killed, or lost the answer), 0 when none is: the storage may be
	// that size already; reconcile or the same expand again sends it again and records it.
	ExpansionPending int64 `json:"expansion_pending,omitempty"`
	// ExpansionNote is set by the expand that finished a pending controller expansion as a
	// node-only one (its plugin now declares node EXPAND_VOLUME only), or that let go a node
	// expansion owed as a guess (letGoOfGuess, nothing sent): what it did, naming the plugin
	// and the sizes. Empty everywhere else.
	ExpansionNote string `json:"expansion_note,omitempty"`
	// Handover is set while the volume is handed over to a Nomad cluster: Nomad is its
	// orchestrator and local claims are refused.
	Handover  *HandoverInfo `json:"handover,omitempty"`
	Claims    []ClaimInfo   `json:"claims"`
	UpdatedAt time.Time     `json:"updated_at"`
	// pluginProbedAt is when the plugin's health the read found was taken (zero: never, or
	// the plugin not registered), for WithPluginProbed.
	pluginProbedAt time.Time
}

// ClaimsAllowing says which claims' mount flags (the volume's, or a claim's own --mount-flag)
// ask for suid, dev or exec (ClaimInfo.MountAllows): "alloc web-0 asks for suid, dev"; "" for
// none. `volume status` and the dashboard's volume detail say it alike.
func ClaimsAllowing(claims []ClaimInfo) string {
	var parts []string
	for _, c := range claims {
		if len(c.MountAllows) > 0 {
			parts = append(parts, fmt.Sprintf("alloc %s asks for %s", c.Alloc, strings.Join(c.MountAllows, ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

// ClaimInfo is one live (or, in history, freed) claim.
type ClaimInfo struct {
	ID             int64               `json:"id"`
	VolumeID       string              `json:"volume_id"`
	Alloc          string              `json:"alloc"`
	Group          string              `json:"group,omitempty"`
	Mode           string              `json:"mode"` // read | write
	AccessMode     spec.AccessMode     `json:"access_mode"`
	AttachmentMode spec.AttachmentMode `json:"attachment_mode"`
	State          string              `json:"state"`
	Releasing      bool                `json:"releasing"`
	NeedsReconcile bool                `json:"needs_reconcile"`
	Degraded       bool                `json:"degraded"` // published before, lost its mount, restore not finished
	TargetPath     string              `json:"target_path"`
	Binds          []Bind              `json:"binds,omitempty"`
	MountAllows    []string            `json:"mount_allows,omitempty"` // which of suid, dev, exec its mount flags ask for (spec.MountFlags.Allows)
	LastRPC        string              `json:"last_rpc,omitempty"`
	LastCode       string              `json:"last_code,omitempty"`
	LastError      string              `json:"last_error,omitempty"`
	CreatedAt      time.Time           `json:"created_at"`
	UpdatedAt      time.Time           `json:"updated_at"`
	FreedAt        time.Time           `json:"freed_at,omitzero"`
	Outcome        string              `json:"outcome,omitempty"`
	// Covered says a published claim's target no longer shows what its publish mounted there
	// (targetCovered's words: the target, what covers it, its umount), as reconcile reports it:
	// set where a view looks (a volume's detail, group status), empty elsewhere.
	Covered string `json:"covered,omitempty"`
	// TargetUnmounted says Covered is of a target with nothing mounted where the publish
	// mounted the volume (lostTarget), not of a cover: the claim's condition says "target
	// unmounted", not "target covered" (TestVolumeStatusDoesNotCallATargetWithNothingMountedCovered).
	TargetUnmounted bool `json:"target_unmounted,omitempty"`
	// volumeKey and allocKey are VolumeID and Alloc as read (VolumeKey, AllocKey).
	volumeKey, allocKey string
	// targetMount is what the target showed once published (store.Claim.TargetMount), which
	// group status holds the target to (markUnbound).
	targetMount *store.TargetMount
}

// VolumeKey is the claim's volume ID as the state has it, to act on the claim by; VolumeID is
// what is shown, scrubbed of secrets where the read was (PluginInfo.Key says why).
func (c ClaimInfo) VolumeKey() string { return cmp.Or(c.volumeKey, c.VolumeID) }

// AllocKey is the claim's alloc as the state has it (VolumeKey).
func (c ClaimInfo) AllocKey() string { return cmp.Or(c.allocKey, c.Alloc) }

// Bind is a group volume_mount: the claim's target bind-mounted at a destination.
type Bind struct {
	Destination     string `json:"destination"`
	ReadOnly        bool   `json:"read_only"`
	PropagationMode string `json:"propagation_mode"`
	// Unbound says the destination does not show the volume now, the claim at rest (group
	// status, the dashboard): nothing, or something else, mounted there, or the destination
	// gone or reached through a symlink; the alloc's error says which (markUnbound).
	Unbound bool `json:"unbound,omitempty"`
}

// ExpansionPendingWay says what sends volume v's pending expansion again (its
// ControllerExpandVolume's answer not recorded): `volctl reconcile`, or, while the volume is
// handed over to Nomad, which reconcile leaves it to, the take-back first. One wording for
// `volume status` and the dashboard, whose detail advised the reconcile of a handed-over volume
// (TestDashboardPendingExpansionOfAHandedOverVolumeSaysItWaitsForTheTakeBack).
func (v VolumeInfo) ExpansionPendingWay() string {
	if v.Handover != nil {
		return fmt.Sprintf("it waits for the volume to be taken back from Nomad at %s (`%s`), then `volctl reconcile` sends it again and records the answer",
			v.Handover.Address, shellquote.Command("volctl nomad release", v.ID))
	}
	return "`volctl reconcile` sends it again and records the answer, as does the expand run again"
}

// AtRest reports whether the claim is published, not being released and not waiting for
// reconcile: the same as store.Claim.AtRest, which the volume list's unsettled count uses.
func (c ClaimInfo) AtRest() bool {
	return store.Claim{State: store.ClaimState(c.State), Releasing: c.Releasing, NeedsReconcile: c.NeedsReconcile}.AtRest()
}

func claimInfo(c store.Claim) ClaimInfo {
	out := ClaimInfo{
		ID: c.ID, VolumeID: c.VolumeID, Alloc: c.Alloc, Group: c.Group, Mode: string(c.Mode),
		AccessMode: c.AccessMode, AttachmentMode: c.AttachmentMode, State: string(c.State),
		Releasing: c.Releasing, NeedsReconcile: c.NeedsReconcile, Degraded: c.Degraded, TargetPath: c.TargetPath,
		LastRPC: c.LastRPC, LastCode: c.LastCode, LastError: c.LastError,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, MountAllows: c.MountFlags.Allows(),
		volumeKey: c.VolumeID, allocKey: c.Alloc, targetMount: c.TargetMount,
	}
	for _, b := range c.Binds {
		out.Binds = append(out.Binds, Bind{Destination: b.Destination, ReadOnly: b.ReadOnly, PropagationMode: b.PropagationMode})
	}
	return out
}

// EventInfo is one entry of the event log.
type EventInfo struct {
	ID       int64     `json:"id"`
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"`
	VolumeID string    `json:"volume_id,omitempty"`
	Alloc    string    `json:"alloc,omitempty"`
	PluginID string    `json:"plugin_id,omitempty"`
	RPC      string    `json:"rpc,omitempty"`
	Code     string    `json:"code,omitempty"`
	Message  string    `json:"message"`
}

func eventInfo(ev store.Event) EventInfo {
	return EventInfo{ID: ev.ID, At: ev.At, Kind: ev.Kind, VolumeID: ev.VolumeID, Alloc: ev.Alloc,
		PluginID: ev.PluginID, RPC: ev.RPC, Code: ev.Code, Message: shownNomadAddressesIn(ev.Message)}
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }
