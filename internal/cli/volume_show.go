package cli

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// How volumes and claims are shown: the volume list, the detail view in the spirit of
// `nomad volume status ID`, and claim tables. volume status, status and quickstart share them.

// writeVolumeTable prints the volume list: one row per volume, no per-volume lookups.
func writeVolumeTable(out io.Writer, vols []engine.VolumeSummary) error {
	t := newVolumeTable(out)
	for i := range vols {
		addVolumeRow(t, &vols[i])
	}
	return t.render()
}

func newVolumeTable(out io.Writer) *table {
	return newTable(out, "ID", "NAME", "PLUGIN", "SCHEDULABLE", "ACCESS MODE", "CLAIMS")
}

func addVolumeRow(t *table, v *engine.VolumeSummary) {
	t.row(v.ID, v.Name, v.PluginID, schedulableCell(*v), string(v.AccessMode), claimsCell(*v))
}

// schedulableCell is "yes", or "no: " and why a volume cannot take claims (engine.Schedulability).
func schedulableCell(v engine.VolumeSummary) string { return v.Schedulability(nil).String() }

// unschedulableReason says why a volume cannot take claims, and what to do about it.
func unschedulableReason(v engine.VolumeInfo) string {
	s := v.Schedulability()
	switch s.Why {
	case engine.VolumeCreating, engine.VolumeDeleting, engine.VolumeNotReady:
		return s.Sentence() + ": volctl reconcile finishes that"
	case engine.PluginNotRegistered:
		return s.Sentence() + ": register it again (volctl plugin register)"
	case engine.PluginDown:
		return fmt.Sprintf("%s; once it is running, %s probes it again", s.Sentence(), shellquote.Command("volctl plugin status", v.PluginID))
	case engine.HandedOver:
		if h := v.Handover; h != nil && h.Unsettled {
			return fmt.Sprintf("it is handed over to the Nomad cluster at %s, but %s", h.Address, h.UnsettledWhy())
		}
		return fmt.Sprintf("%s: after `nomad volume deregister`, %s takes it back", s.Sentence(), shellquote.Command("volctl nomad release", v.ID))
	case engine.OutsideTopology:
		return s.Sentence() // with the way out
	}
	return fmt.Sprintf("%s: %s probes it", s.Sentence(), shellquote.Command("volctl plugin status", v.PluginID))
}

// claimsCell summarises a volume's live claims: "1 write", "2 read, 1 write (1 unsettled)";
// empty (<none>) when it has none.
func claimsCell(v engine.VolumeSummary) string {
	var parts []string
	if v.ReadClaims > 0 {
		parts = append(parts, strconv.Itoa(v.ReadClaims)+" read")
	}
	if v.WriteClaims > 0 {
		parts = append(parts, strconv.Itoa(v.WriteClaims)+" write")
	}
	s := strings.Join(parts, ", ")
	if v.Unsettled > 0 {
		s += fmt.Sprintf(" (%d unsettled)", v.Unsettled)
	}
	return s
}

// stagedCell is the Staged row: yes or no, and with no, a staging path still mounted
// (VolumeInfo.StagingLeft), which "no" alone hid: a plugin that answered NodeUnstageVolume OK
// and left its mount, or a NodeStageVolume whose answer is not recorded yet.
func stagedCell(v engine.VolumeInfo) string {
	if v.Staged || v.StagingLeft == "" {
		return display.YesNo(v.Staged)
	}
	return fmt.Sprintf("no, but %s is still mounted: a NodeUnstageVolume answered OK left it (the claim's error says so; unmount it by hand, then run `volctl reconcile`), "+
		"or a NodeStageVolume's answer is not recorded yet (`volctl reconcile` finishes it)", v.StagingLeft)
}

// sameStorageCell is the Same Storage row: the other volumes recorded on this one's storage
// (VolumeInfo.SameStorage), what that does to claims, and the way out.
func sameStorageCell(v engine.VolumeInfo) string {
	return fmt.Sprintf("%s records this storage too: one storage under two volume IDs, so a claim, expand or handover of either is refused while the other holds it; "+
		"`%s` forgets this record and leaves the storage (or deregister the other)", strings.Join(v.SameStorage, ", "), shellquote.Command("volctl volume deregister", v.ID))
}

// writeVolumeDetail prints everything about one volume, then its capabilities and claims.
func writeVolumeDetail(out io.Writer, v engine.VolumeInfo, now time.Time) error {
	pairs := [][2]string{
		{"ID", v.ID},
		{"Name", v.Name},
		{"Namespace", v.Namespace},
		{"External ID", v.ExternalID},
		{"Plugin ID", v.PluginID},
		{"Provider", v.Provider},
		{"Version", v.ProviderVersion},
		{"Plugin Health", v.PluginHealth().String()},
	}
	if v.PluginError != "" {
		pairs = append(pairs, [2]string{"Plugin Error", v.PluginError})
	}
	pairs = append(pairs,
		[2]string{"State", v.State},
		[2]string{"Schedulable", v.Schedulability().String()},
	)
	if !v.Schedulable {
		pairs = append(pairs, [2]string{"Not Schedulable", unschedulableReason(v)})
	}
	pairs = append(pairs,
		[2]string{"Capacity", exactBytes(v.CapacityBytes)},
		[2]string{"Capacity Requested", capacityRange(v.RequestedMin, v.RequestedMax)},
		[2]string{"Access Mode", string(v.AccessMode)},
		[2]string{"Attachment Mode", string(v.AttachmentMode)},
		[2]string{"Mount Options", mountOptionsCell(v)},
	)
	if asks := engine.ClaimsAllowing(v.Claims); asks != "" {
		pairs = append(pairs, [2]string{"Claim Mount Flags", asks})
	}
	pairs = append(pairs, [2]string{"Staged", stagedCell(v)})
	if len(v.SameStorage) > 0 {
		pairs = append(pairs, [2]string{"Same Storage", sameStorageCell(v)})
	}
	if v.NodeExpansionOwed > 0 {
		// Why it waits, as the publish's event, reconcile and the expand say it (expand35):
		// before, status showed nothing of it but --json's size.
		row := "to " + exactBytes(v.NodeExpansionOwed)
		if v.NodeExpansionWaits != "" {
			row += ": " + v.NodeExpansionWaits
		}
		pairs = append(pairs, [2]string{"Node Expansion Owed", row})
	}
	if v.ExpansionPending > 0 {
		// While handed over, reconcile leaves it, and the expand is refused, until the take-back
		// (TestPendingExpansionOfAHandedOverVolumeSaysItWaitsForTheTakeBack).
		pairs = append(pairs, [2]string{"Expansion Pending", fmt.Sprintf("to %s: ControllerExpandVolume was sent and its answer not recorded (the expand was killed or lost it), so the storage may be that size already; %s",
			exactBytes(v.ExpansionPending), v.ExpansionPendingWay())})
	}
	switch {
	case v.UnpublishWaits != "" && v.Handover != nil:
		pairs = append(pairs, [2]string{"Attached", fmt.Sprintf("to node %q with no local claim: %s", v.AttachedTo, v.UnpublishWaitsClause())})
	case v.UnpublishWaits != "":
		pairs = append(pairs, [2]string{"Attached", fmt.Sprintf("to node %q with no claim: ControllerUnpublishVolume is owed (a forced detach could not send it, or the plugin lost PUBLISH_UNPUBLISH_VOLUME). %s", v.AttachedTo, v.UnpublishWaits)})
	}
	pairs = append(pairs,
		[2]string{"Topologies", topologiesString(v.AccessibleTopology)},
		[2]string{"Topology Request", topologyRequestString(v.TopologyRequest)},
	)
	if v.SnapshotID != "" {
		pairs = append(pairs, [2]string{"Snapshot ID", v.SnapshotID})
	}
	if v.CloneID != "" {
		pairs = append(pairs, [2]string{"Clone ID", v.CloneID})
	}
	pairs = append(pairs,
		[2]string{"Secrets", secretKeysString(v.Secrets)},
		[2]string{"Parameters", mapString(v.Parameters)},
		[2]string{"Context", mapString(v.Context)},
		[2]string{"Created", ago(now, v.CreatedAt)},
	)
	if err := keyValues(out, pairs...); err != nil {
		return err
	}

	fmt.Fprintln(out, "\nCapabilities")
	ct := newTable(out, "ACCESS MODE", "ATTACHMENT MODE")
	for _, c := range v.Capabilities {
		ct.row(string(c.AccessMode), string(c.AttachmentMode))
	}
	if err := ct.render(); err != nil {
		return err
	}

	fmt.Fprintln(out, "\nClaims")
	if len(v.Claims) == 0 {
		fmt.Fprintln(out, "No claims")
		return nil
	}
	return writeClaimTable(out, v.Claims, now, false)
}

// mountOptionsCell is the volume's mount options (spec.MountOptions.Describe), saying which of
// suid, dev and exec its flags ask for: "mount_flags=[REDACTED] (2), asking for suid, dev".
func mountOptionsCell(v engine.VolumeInfo) string {
	s := strings.Join(v.MountOptions.Describe(), ", ")
	if len(v.MountAllows) > 0 {
		s += ", asking for " + strings.Join(v.MountAllows, ", ")
	}
	return s
}

// writeClaimTable prints claims with their state, age and last error (a target found covered in
// its place, as reconcile says it); withVolume adds the
// volume column for claims of several volumes.
func writeClaimTable(out io.Writer, claims []engine.ClaimInfo, now time.Time, withVolume bool) error {
	headers := []string{"ALLOC", "MODE", "ACCESS MODE", "ATTACHMENT MODE", "STATE", "AGE", "LAST ERROR"}
	if withVolume {
		headers = append([]string{"VOLUME"}, headers...)
	}
	t := newTable(out, headers...)
	for _, c := range claims {
		row := []string{c.Alloc, c.Mode, string(c.AccessMode), string(c.AttachmentMode), claimStateCell(c), age(now, c.CreatedAt), cmp.Or(c.Covered, c.LastError)}
		if withVolume {
			row = append([]string{c.VolumeID}, row...)
		}
		t.row(row...)
	}
	return t.render()
}

// claimStateCell is the claim's state with its notes (engine.ClaimCondition):
// "node-staged (degraded, needs reconcile)".
func claimStateCell(c engine.ClaimInfo) string { return c.Condition().String() }

func capacityRange(min, max int64) string {
	switch {
	case min == 0 && max == 0:
		return ""
	case max == 0:
		return "at least " + exactBytes(min)
	case min == 0:
		return "at most " + exactBytes(max)
	}
	return exactBytes(min) + " - " + exactBytes(max)
}

// exactBytes is bytesIEC of n, with n's bytes after it where the rounding shows another size:
// the detail of one volume is read for its exact figures, and "2.0 GiB" of a volume an expand
// to 2GiB left 4 KiB short read as the expansion done, only --json telling them apart
// (TestVolumeStatusCapacityDoesNotHideAnExpandThatFellShort). A list keeps the short form.
func exactBytes(n int64) string { return display.BytesExactly(n) }

func topologiesString(ts []spec.Topology) string { return display.Topologies(ts) }

func topologyRequestString(r *spec.TopologyRequest) string {
	if r == nil {
		return ""
	}
	var parts []string
	if len(r.Required) > 0 {
		parts = append(parts, "required "+topologiesString(r.Required))
	}
	if len(r.Preferred) > 0 {
		parts = append(parts, "preferred "+topologiesString(r.Preferred))
	}
	return strings.Join(parts, "; ")
}

// secretKeysString names the secrets that are set, never their values.
func secretKeysString(s spec.Secrets) string {
	keys := make(map[string]string, len(s))
	for k := range s {
		keys[k] = spec.Redacted
	}
	return mapString(keys)
}

// mapString renders a map as "k=v, k2=v2", sorted by key.
func mapString(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}
