package csi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi/internal/wire"
	"github.com/volctl/volctl/internal/spec"
)

// CreateVolume provisions a volume. A plugin that answers with a capacity below the requested
// minimum, or above the requested maximum (limit_bytes, which the spec says the volume MUST NOT
// exceed), has created a volume outside the request: the volume is returned with an error so
// the caller can delete it.
func (c *Client) CreateVolume(ctx context.Context, r CreateVolumeRequest) (Volume, error) {
	capacity, capacityErr := capacityRange(r.CapacityMin, r.CapacityMax)
	caps, capsErr := capabilitiesToCSI(r.Capabilities)
	source, sourceErr := contentSource(r.SnapshotID, r.CloneID)
	if err := c.prepared(RPCCreateVolume, capacityErr, capsErr, sourceErr); err != nil {
		return Volume{}, err
	}
	req := &csipb.CreateVolumeRequest{
		Name:                      r.Name,
		CapacityRange:             capacity,
		VolumeCapabilities:        caps,
		Parameters:                r.Parameters,
		MutableParameters:         r.MutableParameters,
		Secrets:                   r.Secrets.Plain(),
		VolumeContentSource:       source,
		AccessibilityRequirements: wire.TopologyRequirement(r.TopologyRequest),
	}
	resp, err := send(ctx, c, RPCCreateVolume, req, csipb.ControllerClient.CreateVolume)
	if err != nil {
		return Volume{}, err
	}
	v, err := createdVolume(r, resp)
	return v, refusedAnswer(err, req)
}

// unnamedSource is the kind of content source src names without its ID ("a snapshot", "a
// volume"), "" when it names its ID, or is absent or of a type volctl does not know.
func unnamedSource(src *csipb.VolumeContentSource) string {
	switch {
	case src.GetSnapshot() != nil && src.GetSnapshot().GetSnapshotId() == "":
		return "a snapshot"
	case src.GetVolume() != nil && src.GetVolume().GetVolumeId() == "":
		return "a volume"
	}
	return ""
}

// createdVolume is the volume resp, CreateVolume's answer to r, says the plugin made, or why
// volctl does not use it (with the volume, when the plugin made it for r: to be deleted again).
func createdVolume(r CreateVolumeRequest, resp *csipb.CreateVolumeResponse) (Volume, error) {
	if resp.GetVolume().GetVolumeId() == "" {
		return Volume{}, unreadError{fmt.Errorf("%s: the plugin returned no volume ID for %q", RPCCreateVolume, r.Name)}
	}
	v := volumeFromCSI(resp.GetVolume())
	// A clone is a new volume: an answer naming the source is the source, which recording as
	// the clone would let deleting the clone delete, and which is not returned to delete.
	// So is one naming it spelled otherwise (another case, normal form, surrounding white
	// space), which a plugin that reads IDs so takes for it: before, only the ID exactly as
	// sent was, and the cleanup of an answer too small, or the delete of the clone recorded
	// under it, deleted the source (TestCloneAnsweredWithItsSourceIsRefused).
	if r.CloneID != "" && spec.SameStorageID(v.ID, r.CloneID) {
		itself := fmt.Sprintf("%q itself", v.ID)
		if v.ID != r.CloneID {
			itself = fmt.Sprintf("%+q, %+q spelled otherwise (another case, Unicode normal form or surrounding white space), which a plugin that reads IDs so takes for it", v.ID, r.CloneID)
		}
		return Volume{}, leftAlone{fmt.Errorf("%s: the plugin answered %q, a clone of volume %q, with volume %s: "+
			"it is not recorded as the clone, and left alone (the plugin does not clone: report it to the plugin's authors)",
			RPCCreateVolume, r.Name, r.CloneID, itself)}
	}
	// So is a restore answered with the volume its snapshot was taken of (or that ID spelled
	// otherwise): a plugin that rolls the source back in place, or hands it over, answers so.
	// Recorded as the restored volume, its writes went to the source, and its `volume delete`,
	// or the cleanup of an answer too small, deleted the source's data: the source was
	// refused only while volctl recorded it (sameStorage), not once it was deregistered
	// (TestRestoreAnsweredWithItsSnapshotsSourceIsRefused).
	if r.SnapshotID != "" {
		for _, src := range r.SnapshotSources {
			if src == "" || !spec.SameStorageID(v.ID, src) {
				continue
			}
			itself := fmt.Sprintf("%q", spec.Cut(v.ID, 256))
			if v.ID != src {
				itself = fmt.Sprintf("%+q, %+q spelled otherwise (another case, Unicode normal form or surrounding white space), which a plugin that reads IDs so takes for it",
					spec.Cut(v.ID, 256), spec.Cut(src, 256))
			}
			return Volume{}, leftAlone{fmt.Errorf("%s: the plugin answered %q, a restore from snapshot %q, with volume %s, the volume that snapshot was taken of, not a new one: "+
				"it is not recorded as the restored volume, and left alone, neither recorded nor deleted (the plugin restores in place or answers with the snapshot's source: "+
				"report it to the plugin's authors, and check the source's data, which an in-place restore rolled back)",
				RPCCreateVolume, r.Name, r.SnapshotID, itself)}
		}
	}
	// A content source of a type volctl does not know (a oneof member added to the spec since,
	// or a plugin's own) still says the volume was pre-populated, from what volctl cannot
	// compare with what was asked: not this request's volume, as for another source.
	if src := resp.GetVolume().GetContentSource(); src != nil && src.GetType() == nil && len(src.ProtoReflect().GetUnknown()) > 0 {
		return Volume{}, leftAlone{fmt.Errorf("%s: the plugin answered %q with volume %q, pre-populated from a content source of a type volctl does not know, where %s: "+
			"it is not recorded, and left alone (delete it with the storage provider's tools if nothing uses it)",
			RPCCreateVolume, r.Name, v.ID, askedSource(r))}
	}
	// A content source of a known type whose ID the plugin left out (the spec makes it
	// REQUIRED) still says what kind of source the volume was pre-populated from: a snapshot
	// for an empty volume or a clone, a volume for an empty volume or a restore, is another
	// source than asked, as one naming its ID is. Before, the empty ID read as no source, and
	// the answer was recorded as what was asked (TestEmptyVolumeAnsweredPrePopulatedFromASnapshotIsRefused,
	// TestRestoreAnsweredAsACloneOfAnUnnamedVolumeIsRefused).
	if kind := unnamedSource(resp.GetVolume().GetContentSource()); kind == "a snapshot" && r.SnapshotID == "" || kind == "a volume" && r.CloneID == "" {
		return Volume{}, leftAlone{fmt.Errorf("%s: the plugin answered %q with volume %q, pre-populated from %s whose ID it left out, where %s: "+
			"it is not recorded, and left alone (delete it with the storage provider's tools if nothing uses it)",
			RPCCreateVolume, r.Name, v.ID, kind, askedSource(r))}
	}
	// A content source in the answer says what the volume was pre-populated from (the spec
	// leaves it out as it likes, so only one that is there is compared). Another source than
	// asked is not this request's volume, however the plugin came to answer with it: its data
	// is not what was asked for, and it may be someone's, so it is not returned to delete.
	// The source asked, spelled otherwise (spec.SameStorageID), is that source to a plugin that
	// reads IDs so and answers them in its own spelling, as volctl takes it everywhere else;
	// refused, the volume made for this request was left on the plugin, recorded nowhere, and
	// each create run again left another (TestContentSourceSpelledOtherwiseIsTheSourceAsked).
	if (v.SnapshotID != "" || v.CloneID != "") && (!sameSource(v.SnapshotID, r.SnapshotID) || !sameSource(v.CloneID, r.CloneID)) {
		return Volume{}, leftAlone{fmt.Errorf("%s: the plugin answered %q with volume %q, pre-populated from %s, where %s: "+
			"it is not recorded, and left alone (delete it with the storage provider's tools if nothing uses it)",
			RPCCreateVolume, r.Name, v.ID, describeSource(v.SnapshotID, v.CloneID), askedSource(r))}
	}
	// An ID past MaxObjectID, or holding a control character: the plugin made the volume
	// (unlike the answers above, which name one it did not make for this request), so it is
	// returned to be deleted again.
	if err := unusableID(RPCCreateVolume, r.Name, "volume", v.ID); err != nil {
		return v, err
	}
	// A restore from a snapshot the plugin said it does not have, answered with a volume that
	// names no source (which the spec lets it leave out), or a snapshot without its ID: a
	// plugin that ignores the source made an empty volume for this request, which is deleted
	// again rather than recorded as the snapshot's data
	// (TestRestoreFromASnapshotThePluginSaysItHasNotIsNotSaidCreated,
	// TestRestoreFromAnUnlistedSnapshotAnsweredWithAnUnnamedSnapshotSourceIsNotSaidCreated).
	if r.SnapshotID != "" && r.SnapshotUnlisted && (resp.GetVolume().GetContentSource() == nil || unnamedSource(resp.GetVolume().GetContentSource()) != "") {
		if r.UnlistedKept {
			return Volume{}, fmt.Errorf("%s: the plugin answered %q, a restore from snapshot %q sent again (its first answer lost), with volume %q naming no content source, and it has no such snapshot now: "+
				"the volume may be empty, or hold what the first send restored before the snapshot went; it is not recorded as the restore, and left alone: "+
				"check what it holds with the storage provider's tools before deleting it (%w)",
				RPCCreateVolume, r.Name, r.SnapshotID, spec.Cut(v.ID, 256), ErrUnlistedKept)
		}
		return v, fmt.Errorf("%s: the plugin answered %q, a restore from snapshot %q, which it said just before it does not have, with volume %q naming no content source: "+
			"the volume may be empty, not the snapshot's data; check the snapshot_id given (`volctl volume snapshot list` shows what the plugin lists)",
			RPCCreateVolume, r.Name, r.SnapshotID, spec.Cut(v.ID, 256))
	}
	// Zero capacity means the plugin does not know the size, which the spec allows.
	if r.CapacityMin > 0 && v.CapacityBytes > 0 && v.CapacityBytes < r.CapacityMin {
		return v, fmt.Errorf("%s: the plugin created volume %q with %s, below the requested minimum of %s",
			RPCCreateVolume, v.ID, bytesNamed(v.CapacityBytes), bytesNamed(r.CapacityMin))
	}
	if r.SourceSize > 0 && v.CapacityBytes > 0 && v.CapacityBytes < r.SourceSize {
		rule := "a volume cannot hold a volume's data in less room"
		if r.SnapshotID != "" {
			rule = "the CSI spec: a volume restored from a snapshot MUST NOT be smaller than it"
		}
		return v, fmt.Errorf("%s: the plugin created volume %q from %s with %s, smaller than the %s its source has (as volctl records it, or the plugin lists it), which it cannot hold (%s)",
			RPCCreateVolume, v.ID, describeSource(r.SnapshotID, r.CloneID), bytesNamed(v.CapacityBytes), bytesNamed(r.SourceSize), rule)
	}
	if r.CapacityMax > 0 && v.CapacityBytes > r.CapacityMax {
		return v, fmt.Errorf("%s: the plugin created volume %q with %s, above the requested maximum (limit_bytes) of %s",
			RPCCreateVolume, v.ID, bytesNamed(v.CapacityBytes), bytesNamed(r.CapacityMax))
	}
	// The spec: with requisite topologies, the volume MUST be accessible from at least one of
	// them. A volume the plugin placed elsewhere is as unusable as one too small.
	if req := r.TopologyRequest; req != nil && len(req.Required) > 0 && len(v.AccessibleTopology) > 0 &&
		!topologiesOverlap(v.AccessibleTopology, req.Required) {
		return v, fmt.Errorf("%s: the plugin created volume %q accessible from %s, outside the requisite topology %s that was asked",
			RPCCreateVolume, v.ID, describeTopologies(v.AccessibleTopology), describeTopologies(req.Required))
	}
	// Past their bounds, a volume's topologies and context (which the refusals above do not
	// quote whole) are refused too.
	if err := checkVolumeTopologies(r.Name, v); err != nil {
		return v, err
	}
	if n := MapSize(v.Context); n > maxVolumeContext {
		return v, fmt.Errorf("%s: the plugin answered %q with volume %q whose volume_context holds %d bytes of keys and values (%d entries), far past the CSI spec's 4 KiB for a map (volctl takes up to %d): it is not used; fix the plugin",
			RPCCreateVolume, r.Name, spec.Cut(v.ID, 256), n, len(v.Context), maxVolumeContext)
	}
	return v, nil
}

// sameSource says whether an answer's content source ID is the one asked, "" alike.
func sameSource(answered, asked string) bool {
	return answered == asked || (answered != "" && asked != "" && spec.SameStorageID(answered, asked))
}

// askedSource says what content a CreateVolume request asked for, for messages.
func askedSource(r CreateVolumeRequest) string {
	if r.SnapshotID != "" || r.CloneID != "" {
		return "one from " + describeSource(r.SnapshotID, r.CloneID) + " was asked"
	}
	return "an empty volume was asked"
}

// describeSource names a volume's content source (one is set), for messages.
func describeSource(snapshotID, cloneID string) string {
	if snapshotID != "" {
		return fmt.Sprintf("snapshot %q", snapshotID)
	}
	return fmt.Sprintf("volume %q", cloneID)
}

// topologiesOverlap reports whether one of got lies in one of want: the segments one of them
// sets are all set, alike, in the other ({zone=a} and {zone=a, rack=1} overlap). Keys compare
// without case (spec.SegmentsWithin).
func topologiesOverlap(got, want []spec.Topology) bool {
	within := spec.SegmentsWithin
	for _, g := range got {
		for _, w := range want {
			if within(g.Segments, w.Segments) || within(w.Segments, g.Segments) {
				return true
			}
		}
	}
	return false
}

// describeTopologies renders topologies as {k=v, ...} with sorted keys, or a list of those.
func describeTopologies(ts []spec.Topology) string {
	// The first few: a plugin's answer may list as many as gRPC's 4 MiB holds.
	parts := make([]string, 0, min(len(ts), maxTopologiesShown)+1)
	for _, t := range ts[:min(len(ts), maxTopologiesShown)] {
		keys := slices.Sorted(maps.Keys(t.Segments))
		segs := make([]string, len(keys))
		for j, k := range keys {
			segs[j] = k + "=" + t.Segments[k]
		}
		parts = append(parts, spec.Cut("{"+strings.Join(segs, ", ")+"}", maxTopologyShown))
	}
	if len(ts) == 1 {
		return parts[0]
	}
	if more := len(ts) - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// maxTopologiesShown is how many topologies of a list a message names, and maxTopologyShown
// how much of each (CSI allows segments of 63-byte keys and values; a plugin may send more).
const (
	maxTopologiesShown = 8
	maxTopologyShown   = 256
)

// DeleteVolume deletes a volume. NOT_FOUND comes back as an ignorable *Error.
func (c *Client) DeleteVolume(ctx context.Context, r DeleteVolumeRequest) error {
	req := &csipb.DeleteVolumeRequest{VolumeId: r.VolumeID, Secrets: r.Secrets.Plain()}
	_, err := send(ctx, c, RPCDeleteVolume, req, csipb.ControllerClient.DeleteVolume)
	return err
}

// ControllerPublishVolume attaches a volume to a node and returns the publish context, which
// must be passed to NodeStageVolume and NodePublishVolume.
func (c *Client) ControllerPublishVolume(ctx context.Context, r ControllerPublishVolumeRequest) (map[string]string, error) {
	vc, err := r.Capability.toCSI()
	if err := c.prepared(RPCControllerPublishVolume, err); err != nil {
		return nil, err
	}
	req := &csipb.ControllerPublishVolumeRequest{
		VolumeId:         r.VolumeID,
		NodeId:           r.NodeID,
		VolumeCapability: vc,
		Readonly:         r.ReadOnly,
		Secrets:          r.Secrets.Plain(),
		VolumeContext:    r.VolumeContext,
	}
	resp, err := send(ctx, c, RPCControllerPublishVolume, req, csipb.ControllerClient.ControllerPublishVolume)
	if err != nil {
		return nil, err
	}
	return resp.GetPublishContext(), nil
}

// ControllerUnpublishVolume detaches a volume from a node. NOT_FOUND is ignorable.
func (c *Client) ControllerUnpublishVolume(ctx context.Context, r ControllerUnpublishVolumeRequest) error {
	req := &csipb.ControllerUnpublishVolumeRequest{VolumeId: r.VolumeID, NodeId: r.NodeID, Secrets: r.Secrets.Plain()}
	_, err := send(ctx, c, RPCControllerUnpublishVolume, req, csipb.ControllerClient.ControllerUnpublishVolume)
	return err
}

// ValidateVolumeCapabilities checks that a volume supports the requested capabilities. The
// spec: `confirmed` is set only when the plugin supports every requested capability, and
// otherwise left out, with `message` saying why. So an answer without `confirmed` is a
// refusal; one with it must match every requested capability on the fields the plugin set.
// Either failure wraps ErrNotConfirmed and carries the plugin's message.
func (c *Client) ValidateVolumeCapabilities(ctx context.Context, r ValidateVolumeCapabilitiesRequest) error {
	caps, err := capabilitiesToCSI(r.Capabilities)
	if err := c.prepared(RPCValidateVolumeCapabilities, err); err != nil {
		return err
	}
	req := &csipb.ValidateVolumeCapabilitiesRequest{
		VolumeId:           r.VolumeID,
		VolumeContext:      r.VolumeContext,
		VolumeCapabilities: caps,
		Parameters:         r.Parameters,
		MutableParameters:  r.MutableParameters,
		Secrets:            r.Secrets.Plain(),
	}
	resp, err := send(ctx, c, RPCValidateVolumeCapabilities, req, csipb.ControllerClient.ValidateVolumeCapabilities)
	if err != nil {
		return err
	}
	conf := resp.GetConfirmed()
	if conf == nil {
		err := fmt.Errorf("%s: volume %q: the plugin did not confirm the capabilities %s: %w", RPCValidateVolumeCapabilities,
			r.VolumeID, describeCapabilities(r.Capabilities), ErrNotConfirmed)
		if msg := c.pluginText(ctx, req, resp.GetMessage()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		} else {
			err = fmt.Errorf("%w (it gave no reason)", err)
		}
		return err
	}
	for _, f := range []struct {
		name      string
		sent, got map[string]string
	}{
		{"parameters", req.Parameters, conf.GetParameters()},
		{"mutable_parameters", req.MutableParameters, conf.GetMutableParameters()},
		{"volume_context", req.VolumeContext, conf.GetVolumeContext()},
	} {
		// Optional in the answer, but where set the CO compares it with what it sent (the
		// spec): a plugin that confirms other values validated another volume, or read the
		// request otherwise (TestConfirmedParametersAndContextAreComparedWithWhatWasSent).
		// The keys are named, not the values, which may be anything the plugin put there.
		if len(f.got) == 0 || maps.Equal(f.sent, f.got) {
			continue
		}
		// The keys the plugin set are its words, scrubbed as its message is: it may have
		// echoed a secret of the request into one.
		err := fmt.Errorf("%s: volume %q: the plugin confirmed other %s than were sent (%s): %w", RPCValidateVolumeCapabilities, r.VolumeID,
			f.name, c.pluginText(ctx, req, differingKeys(f.sent, f.got)), ErrNotConfirmed)
		if msg := c.pluginText(ctx, req, resp.GetMessage()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	for i, want := range req.VolumeCapabilities {
		ok := false
		for _, got := range conf.GetVolumeCapabilities() {
			if capabilityConfirmed(want, got) {
				ok = true
				break
			}
		}
		if !ok {
			// The answer confirms something, and not this: say what it confirmed, which a
			// plugin that answers for another volume, or another request, shows.
			vc := r.Capabilities[i]
			err := fmt.Errorf("%s: volume %q: capability %s/%s is not among those the plugin confirmed (%s): %w", RPCValidateVolumeCapabilities, r.VolumeID,
				vc.AccessMode, vc.AttachmentMode, confirmedWords(conf.GetVolumeCapabilities()), ErrNotConfirmed)
			if msg := c.pluginText(ctx, req, resp.GetMessage()); msg != "" {
				err = fmt.Errorf("%w: %s", err, msg)
			}
			return err
		}
	}
	return nil
}

// differingKeys names, sorted and quoted, the keys whose values differ between sent and got
// (one of them missing included), at most five, and how many more.
func differingKeys(sent, got map[string]string) string {
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(sent)) {
		if v, ok := got[k]; !ok || v != sent[k] {
			keys = append(keys, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := sent[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	words := make([]string, 0, 5)
	for _, k := range keys[:min(len(keys), 5)] {
		words = append(words, strconv.Quote(spec.Cut(k, 64)))
	}
	out := "keys differing: " + strings.Join(words, ", ")
	if len(keys) > 5 {
		out += fmt.Sprintf(" and %d more", len(keys)-5)
	}
	return out
}

// confirmedWords names the capabilities a ValidateVolumeCapabilities answer confirmed as volume
// specs write them (access mode/attachment mode, "none" for an empty list).
func confirmedWords(caps []*csipb.VolumeCapability) string {
	var out []string
	for _, c := range caps {
		mode := strings.ToLower(strings.ReplaceAll(c.GetAccessMode().GetMode().String(), "_", "-"))
		attach := "file-system"
		if c.GetBlock() != nil {
			attach = "block-device"
		}
		out = append(out, mode+"/"+attach)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// ControllerGetCapabilities returns the controller service's capabilities.
func (c *Client) ControllerGetCapabilities(ctx context.Context) (ControllerCapabilities, error) {
	resp, err := send(ctx, c, RPCControllerGetCapabilities, &csipb.ControllerGetCapabilitiesRequest{}, csipb.ControllerClient.ControllerGetCapabilities)
	if err != nil {
		return ControllerCapabilities{}, err
	}
	return controllerCapabilitiesFromCSI(resp.GetCapabilities()), nil
}

// CreateSnapshot snapshots a volume.
func (c *Client) CreateSnapshot(ctx context.Context, r CreateSnapshotRequest) (Snapshot, error) {
	req := &csipb.CreateSnapshotRequest{
		SourceVolumeId: r.SourceVolumeID,
		Name:           r.Name,
		Secrets:        r.Secrets.Plain(),
		Parameters:     r.Parameters,
	}
	resp, err := send(ctx, c, RPCCreateSnapshot, req, csipb.ControllerClient.CreateSnapshot)
	if err != nil {
		return Snapshot{}, err
	}
	if resp.GetSnapshot().GetSnapshotId() == "" {
		return Snapshot{}, unreadError{fmt.Errorf("%s: the plugin returned no snapshot ID for %q", RPCCreateSnapshot, r.Name)}
	}
	if err := unusableID(RPCCreateSnapshot, r.Name, "snapshot", resp.GetSnapshot().GetSnapshotId()); err != nil {
		// Taken, but by an answer volctl does not use: as one without an ID, its name is what
		// finds it (the snapshot's create stays recorded, saying so).
		return Snapshot{}, refusedAnswer(unreadError{err}, req)
	}
	return snapshotFromCSI(resp.GetSnapshot()), nil
}

// checkVolumeTopologies refuses a created volume (v, made for request name) whose accessible
// topologies are past their bounds: each as a node's (segmentsProblem), all of them together
// maxTopologies. The plugin made the volume, so it is returned with the error, to be deleted
// again, as one with an ID past MaxObjectID. Before, a megabyte of topologies (as many as
// gRPC's 4 MiB holds) was recorded with the volume, shown whole by volume status, the
// dashboard and export, and matched at each claim.
func checkVolumeTopologies(name string, v Volume) error {
	total := 0
	for _, t := range v.AccessibleTopology {
		problem, size := segmentsProblem(t.Segments)
		if problem != "" {
			return fmt.Errorf("%s: the plugin answered %q with volume %q accessible from a topology with %s: it is not used; fix the plugin",
				RPCCreateVolume, name, spec.Cut(v.ID, 256), problem)
		}
		total += size
	}
	if total > maxTopologies {
		return fmt.Errorf("%s: the plugin answered %q with volume %q accessible from %d topologies, %d bytes of keys and values (volctl takes up to %d): it is not used; fix the plugin",
			RPCCreateVolume, name, spec.Cut(v.ID, 256), len(v.AccessibleTopology), total, maxTopologies)
	}
	return nil
}

// maxVolumeContext bounds the volume_context of a volume CreateVolume answers with (and
// MaxPublishContext the publish_context ControllerPublishVolume answers with, which the engine
// checks), four times the CSI spec's 4 KiB for a map, as a topology's: past it the volume is refused and deleted
// again, as one with an ID past MaxObjectID. Before, one up to gRPC's 4 MiB was recorded,
// shown whole by volume status and the dashboard, and sent back in every NodeStageVolume and
// NodePublishVolume of the volume.
const (
	maxVolumeContext  = spec.MaxPluginMap // a register spec's context is held to it too
	MaxPublishContext = maxVolumeContext
)

// MapSize is a map's keys and values in bytes, as the CSI spec measures a map.
func MapSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// MaxObjectID bounds the ID of a volume or snapshot a plugin's CreateVolume or CreateSnapshot
// answers with. The CSI spec bounds a string to 128 bytes, but drivers that put a server, a
// share and a path in their IDs go past that, so volctl takes up to 4 KiB (Linux's bound on a
// path) and refuses longer: before, an ID up to gRPC's 4 MiB was recorded, shown whole in every
// listing and error, and sent back in every RPC on the volume. A snapshot a listing names by
// an ID past it, or its source volume so, is left out of what `snapshot list` shows
// (engine's listPluginSnapshots): no such snapshot is volctl's.
const MaxObjectID = 4096

// refusedAnswer is err, volctl's refusal of a plugin's answer to req (which quotes what the
// plugin answered: an ID, a topology), with its text scrubbed of req's secret values and mount
// flags, as the plugin's own messages are (pluginText): the answer may echo them, and a refused
// create records nothing whose secrets a later scrub (the command line's, the log's) would know.
// The scrub finds a value the quote cut, too (findAtCuts). Its kind is kept (errors.As).
func refusedAnswer(err error, req proto.Message) error {
	if err == nil {
		return nil
	}
	msg := scrubWords(scrub(err.Error(), sensitiveValues(req)), shortSecrets(req))
	if msg == err.Error() {
		return err
	}
	return &scrubbedError{error: err, msg: msg}
}

// scrubbedError is an error shown scrubbed (refusedAnswer), that unwraps to the error itself.
type scrubbedError struct {
	error
	msg string
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.error }

// unusableID is the error of an answer to rpc for name whose ID (of a kind) is past
// MaxObjectID, the ID shown cut, or holds a control character (spec.ControlIn), which no spec
// can name: before, such an ID was recorded, and `volctl export nomad` of the volume failed its
// own check of the spec it wrote, a snapshot_id naming the snapshot could not be written. nil
// for an ID volctl uses.
func unusableID(rpc, name, kind, id string) error {
	if len(id) > MaxObjectID {
		return fmt.Errorf("%s: the plugin answered %q with a %s ID of %d bytes (%q), far past the CSI spec's 128 bytes (volctl takes up to %d): it is not used; fix the plugin",
			rpc, name, kind, len(id), spec.Cut(id, 64), MaxObjectID)
	}
	if ch, ok := spec.ControlIn(id); ok {
		return fmt.Errorf("%s: the plugin answered %q with a %s ID holding the control character %U (%q), which no volctl spec can name: it is not used; fix the plugin",
			rpc, name, kind, ch, spec.Cut(id, 128))
	}
	return nil
}

// DeleteSnapshot deletes a snapshot. NOT_FOUND is ignorable.
func (c *Client) DeleteSnapshot(ctx context.Context, r DeleteSnapshotRequest) error {
	req := &csipb.DeleteSnapshotRequest{SnapshotId: r.SnapshotID, Secrets: r.Secrets.Plain()}
	_, err := send(ctx, c, RPCDeleteSnapshot, req, csipb.ControllerClient.DeleteSnapshot)
	return err
}

// GetSnapshot asks a plugin with GET_SNAPSHOT about one snapshot. The engine sends it, as it
// sends ListSnapshots, only after a DeleteSnapshot answered OK or NOT_FOUND, to a plugin that
// cannot be asked by ListSnapshots; NOT_FOUND is its word that it no longer has the snapshot.
func (c *Client) GetSnapshot(ctx context.Context, r GetSnapshotRequest) (Snapshot, error) {
	req := &csipb.GetSnapshotRequest{SnapshotId: r.SnapshotID, Secrets: r.Secrets.Plain()}
	resp, err := send(ctx, c, RPCGetSnapshot, req, csipb.ControllerClient.GetSnapshot)
	if err != nil {
		return Snapshot{}, err
	}
	return snapshotFromCSI(resp.GetSnapshot()), nil
}

// ListSnapshots returns one page of snapshots.
func (c *Client) ListSnapshots(ctx context.Context, r ListSnapshotsRequest) (ListSnapshotsResponse, error) {
	req := &csipb.ListSnapshotsRequest{
		MaxEntries:     r.MaxEntries,
		StartingToken:  r.StartingToken,
		SourceVolumeId: r.SourceVolumeID,
		SnapshotId:     r.SnapshotID,
		Secrets:        r.Secrets.Plain(),
	}
	resp, err := send(ctx, c, RPCListSnapshots, req, csipb.ControllerClient.ListSnapshots)
	if err != nil {
		return ListSnapshotsResponse{}, err
	}
	out := ListSnapshotsResponse{NextToken: resp.GetNextToken(), Snapshots: make([]Snapshot, 0, len(resp.GetEntries()))}
	for _, e := range resp.GetEntries() {
		out.Snapshots = append(out.Snapshots, snapshotFromCSI(e.GetSnapshot()))
	}
	return out, nil
}

// ListedVolume is one entry of ListVolumes.
type ListedVolume struct {
	Volume           Volume   `json:"volume"`
	PublishedNodeIDs []string `json:"published_node_ids,omitempty"`
}

// ListVolumesResponse is one page of volumes.
type ListVolumesResponse struct {
	Entries   []ListedVolume `json:"entries"`
	NextToken string         `json:"next_token,omitempty"`
}

// ListVolumes returns one page of the plugin's volumes. The engine sends it only after a
// DeleteVolume answered OK, to a plugin with LIST_VOLUMES, to see the volume gone.
func (c *Client) ListVolumes(ctx context.Context, r ListVolumesRequest) (ListVolumesResponse, error) {
	req := &csipb.ListVolumesRequest{MaxEntries: r.MaxEntries, StartingToken: r.StartingToken}
	resp, err := send(ctx, c, RPCListVolumes, req, csipb.ControllerClient.ListVolumes)
	if err != nil {
		return ListVolumesResponse{}, err
	}
	out := ListVolumesResponse{NextToken: resp.GetNextToken(), Entries: make([]ListedVolume, 0, len(resp.GetEntries()))}
	for _, e := range resp.GetEntries() {
		out.Entries = append(out.Entries, ListedVolume{
			Volume:           volumeFromCSI(e.GetVolume()),
			PublishedNodeIDs: e.GetStatus().GetPublishedNodeIds(),
		})
	}
	return out, nil
}

// ControllerGetVolumeResponse is what ControllerGetVolume says of one volume: the volume, and
// the nodes it is published to (filled in only by a plugin with LIST_VOLUMES_PUBLISHED_NODES,
// as ListVolumes' are).
type ControllerGetVolumeResponse struct {
	Volume           Volume   `json:"volume"`
	PublishedNodeIDs []string `json:"published_node_ids,omitempty"`
}

// ControllerGetVolume asks a plugin with GET_VOLUME about one volume. The engine sends it, as it
// sends ListVolumes, only after a DeleteVolume or ControllerUnpublishVolume answered OK or
// NOT_FOUND, to a plugin that cannot be asked by ListVolumes; NOT_FOUND is its word that it no
// longer has the volume.
func (c *Client) ControllerGetVolume(ctx context.Context, r ControllerGetVolumeRequest) (ControllerGetVolumeResponse, error) {
	req := &csipb.ControllerGetVolumeRequest{VolumeId: r.VolumeID}
	resp, err := send(ctx, c, RPCControllerGetVolume, req, csipb.ControllerClient.ControllerGetVolume)
	if err != nil {
		return ControllerGetVolumeResponse{}, err
	}
	return ControllerGetVolumeResponse{
		Volume:           volumeFromCSI(resp.GetVolume()),
		PublishedNodeIDs: resp.GetStatus().GetPublishedNodeIds(),
	}, nil
}

// ControllerExpandVolume grows a volume on the controller.
func (c *Client) ControllerExpandVolume(ctx context.Context, r ControllerExpandVolumeRequest) (ControllerExpandVolumeResponse, error) {
	capacity, capacityErr := capacityRange(r.CapacityMin, r.CapacityMax)
	vc, vcErr := optionalCapabilityToCSI(r.Capability)
	if err := c.prepared(RPCControllerExpandVolume, capacityErr, vcErr); err != nil {
		return ControllerExpandVolumeResponse{}, err
	}
	req := &csipb.ControllerExpandVolumeRequest{VolumeId: r.VolumeID, CapacityRange: capacity, Secrets: r.Secrets.Plain(), VolumeCapability: vc}
	resp, err := send(ctx, c, RPCControllerExpandVolume, req, csipb.ControllerClient.ControllerExpandVolume)
	if err != nil {
		return ControllerExpandVolumeResponse{}, err
	}
	if err := negativeCapacity(RPCControllerExpandVolume, r.VolumeID, resp.GetCapacityBytes()); err != nil {
		return ControllerExpandVolumeResponse{}, err
	}
	return ControllerExpandVolumeResponse{CapacityBytes: resp.GetCapacityBytes(), NodeExpansionRequired: resp.GetNodeExpansionRequired()}, nil
}

// negativeCapacity refuses an expansion's answer OK with a negative capacity_bytes: a size is
// never negative (the CSI spec says so of every capacity it defines). The plugin said it did
// the expansion, but the answer says nothing volctl can record, so it is an answer unread
// (IsAnswerUnread), the same for ControllerExpandVolume and NodeExpandVolume: the caller keeps
// the recorded size and the node expansion owed, and says the expansion may be done, to be
// asked again (both RPCs are idempotent). Reading it as "not stated", as 0 is, would record
// the size asked as reached on an answer that is wrong.
func negativeCapacity(rpc, volumeID string, n int64) error {
	if n >= 0 {
		return nil
	}
	return unreadError{fmt.Errorf("%s: the plugin answered OK for volume %q with capacity_bytes %d, a negative size, which the CSI spec does not allow: its answer is not used",
		rpc, volumeID, n)}
}

// describeCapabilities names capabilities as access/attachment pairs, for messages.
func describeCapabilities(caps []VolumeCapability) string {
	out := ""
	for i, c := range caps {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s/%s", c.AccessMode, c.AttachmentMode)
	}
	return out
}

// bytesNamed is n bytes as a spec writes a size ("2MiB"), or as a count where no unit divides
// it ("1 byte", "2097153 bytes"): "with 1 bytes, below the requested minimum of 2097152" was two
// numbers to convert.
func bytesNamed(n int64) string {
	switch f := spec.FormatSize(n); {
	case n == 1:
		return "1 byte"
	case strings.HasSuffix(f, "B"):
		return f
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
