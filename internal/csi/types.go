package csi

import (
	"errors"
	"fmt"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// The owned request and response types. They reuse the spec vocabulary so that secrets and
// mount flags redact themselves wherever a value is printed, logged or marshalled; only this
// package reads them raw, when it builds the wire request. Nil maps and zero sizes mean
// "unset" and reach the plugin as unset fields.

// VolumeCapability is one requested capability: the (access, attachment) pair and, for a
// file-system attachment, the filesystem type and mount flags.
type VolumeCapability struct {
	spec.Capability
	MountOptions *spec.MountOptions `json:"mount_options,omitempty"`
}

// String renders the capability with its mount flags redacted. fmt does not reach a nested
// pointer's Stringers on every verb (%s prints *MountOptions raw), so the capability formats
// its mount options itself.
func (vc VolumeCapability) String() string {
	s := fmt.Sprintf("%s/%s", vc.AccessMode, vc.AttachmentMode)
	if mo := vc.MountOptions; mo != nil {
		s += fmt.Sprintf(" fs_type=%q mount_flags=%s", mo.FSType, mo.MountFlags.String())
	}
	return s
}

// PluginInfo is what GetPluginInfo reports.
type PluginInfo struct {
	Name          string            `json:"name"`
	VendorVersion string            `json:"vendor_version"`
	Manifest      map[string]string `json:"manifest,omitempty"`
}

// NodeInfo is what NodeGetInfo reports.
type NodeInfo struct {
	NodeID             string         `json:"node_id"`
	MaxVolumes         int64          `json:"max_volumes"` // 0: the plugin sets no limit
	AccessibleTopology *spec.Topology `json:"accessible_topology,omitempty"`
}

// Fingerprint is everything volctl learns about a plugin on (re)connect, in one value.
type Fingerprint struct {
	Provider           string            `json:"provider"`
	Version            string            `json:"version"` // vendor_version; a split plugin's halves' both where they differ: "1.0 (node half: 2.0)"
	Manifest           map[string]string `json:"manifest,omitempty"`
	Capabilities       Capabilities      `json:"capabilities"`
	NodeID             string            `json:"node_id,omitempty"` // empty for a controller-only plugin
	MaxVolumes         int64             `json:"max_volumes"`
	AccessibleTopology *spec.Topology    `json:"accessible_topology,omitempty"`
	// Controller and Node say which services were fingerprinted: the controller when the
	// plugin advertises CONTROLLER_SERVICE and a controller socket is configured, the node
	// when a node socket is configured.
	Controller bool `json:"controller"`
	Node       bool `json:"node"`
}

// Volume is a volume as the plugin describes it.
type Volume struct {
	ID                 string            `json:"id"` // the plugin's volume ID: volctl's external_id
	CapacityBytes      int64             `json:"capacity_bytes"`
	Context            map[string]string `json:"context,omitempty"`
	SnapshotID         string            `json:"snapshot_id,omitempty"` // content source, if created from a snapshot
	CloneID            string            `json:"clone_id,omitempty"`    // content source, if cloned from a volume
	AccessibleTopology []spec.Topology   `json:"accessible_topology,omitempty"`
}

// CreateVolumeRequest asks a controller to provision a volume. Name is the idempotency key.
type CreateVolumeRequest struct {
	Name              string
	CapacityMin       int64 // bytes; 0 with CapacityMax 0 sends no capacity range
	CapacityMax       int64
	Capabilities      []VolumeCapability
	Parameters        map[string]string
	MutableParameters map[string]string
	Secrets           spec.Secrets
	SnapshotID        string // create from this snapshot; exclusive with CloneID
	CloneID           string // clone this volume
	TopologyRequest   *spec.TopologyRequest
	// SnapshotSources, with SnapshotID, are the IDs of the volume that snapshot was taken of,
	// as volctl knows them (its snapshot record, the plugin's listing); not sent. A restore is
	// a new volume: an answer naming one of them is the source (a plugin that restores in
	// place, or hands the source over), as an answer naming CloneID is a clone's.
	SnapshotSources []string
	// SourceSize is the size volctl records of what the volume is made from, the snapshot's
	// size_bytes or the cloned volume's capacity (0 when not known); not sent. An answer
	// smaller than it cannot hold the source's data (the CSI spec: a volume restored from a
	// snapshot MUST NOT be smaller than it), and is refused as one below CapacityMin is.
	SourceSize int64
	// SnapshotUnlisted, with SnapshotID, says the plugin, asked before the create, had no
	// snapshot of that ID (its complete listing, or GetSnapshot's NOT_FOUND), which volctl
	// does not record either; not sent. An answer naming no content source then is refused:
	// a plugin that ignores the source made an empty volume, where the user expects the
	// snapshot's data (TestRestoreFromASnapshotThePluginSaysItHasNotIsNotSaidCreated).
	SnapshotUnlisted bool
	// UnlistedKept, with SnapshotUnlisted, is a create sent again (its first answer lost): the
	// volume an answer naming no source returns is left alone, not deleted, since the first
	// send may have restored the data into it before the snapshot went; not sent.
	UnlistedKept bool
}

// ErrUnlistedKept is matched by the refusal of a create sent again (UnlistedKept) whose answer
// names no source for a snapshot the plugin does not have: its volume is left alone.
var ErrUnlistedKept = errors.New("a restore sent again, from a snapshot the plugin does not have, answered with no content source")

// ErrLeftAlone is matched by CreateVolume's refusal of an answer naming a volume not made for
// the request (another content source than asked, one of a type volctl does not know or with
// its ID left out, a clone or restore answered with its source): the plugin holds that volume
// under the name, and it is left alone, neither recorded nor returned to delete. A delete
// finishing an interrupted create that met one forgot the volume and said "deleted"
// (TestDeleteOfAnInterruptedCreateAnsweredWithAnotherSourceIsNotSaidDeleted).
var ErrLeftAlone = errors.New("CreateVolume answered with a volume not made for the request, left alone")

// leftAlone is a refusal matching ErrLeftAlone, its words as they are.
type leftAlone struct{ error }

func (e leftAlone) Unwrap() error        { return e.error }
func (e leftAlone) Is(target error) bool { return target == ErrLeftAlone }

// DeleteVolumeRequest asks a controller to delete a volume.
type DeleteVolumeRequest struct {
	VolumeID string
	Secrets  spec.Secrets
}

// ControllerPublishVolumeRequest attaches a volume to a node.
type ControllerPublishVolumeRequest struct {
	VolumeID      string
	NodeID        string // the plugin's node ID, from NodeGetInfo
	Capability    VolumeCapability
	ReadOnly      bool
	Secrets       spec.Secrets
	VolumeContext map[string]string
}

// ControllerUnpublishVolumeRequest detaches a volume from a node.
type ControllerUnpublishVolumeRequest struct {
	VolumeID string
	NodeID   string
	Secrets  spec.Secrets
}

// ValidateVolumeCapabilitiesRequest asks whether a volume supports capabilities.
type ValidateVolumeCapabilitiesRequest struct {
	VolumeID          string
	VolumeContext     map[string]string
	Capabilities      []VolumeCapability
	Parameters        map[string]string
	MutableParameters map[string]string
	Secrets           spec.Secrets
}

// ListVolumesRequest pages through the plugin's volumes.
type ListVolumesRequest struct {
	MaxEntries    int32
	StartingToken string
}

// ControllerGetVolumeRequest asks a controller with GET_VOLUME about one volume.
type ControllerGetVolumeRequest struct {
	VolumeID string
}

// GetCapacityRequest asks how much space the plugin has for volumes like these (csitest records it; only
// the tests send it).
type GetCapacityRequest struct {
	Capabilities       []VolumeCapability
	Parameters         map[string]string
	AccessibleTopology *spec.Topology
}

// CreateSnapshotRequest asks a controller to snapshot a volume. Name is the idempotency key.
type CreateSnapshotRequest struct {
	SourceVolumeID string
	Name           string
	Secrets        spec.Secrets
	Parameters     map[string]string
}

// Snapshot is a snapshot as the plugin describes it.
type Snapshot struct {
	ID              string    `json:"id"`
	SourceVolumeID  string    `json:"source_volume_id"`
	SizeBytes       int64     `json:"size_bytes"`
	CreatedAt       time.Time `json:"created_at"` // zero when the plugin did not say
	ReadyToUse      bool      `json:"ready_to_use"`
	GroupSnapshotID string    `json:"group_snapshot_id,omitempty"`
}

// DeleteSnapshotRequest asks a controller to delete a snapshot.
type DeleteSnapshotRequest struct {
	SnapshotID string
	Secrets    spec.Secrets
}

// ListSnapshotsRequest pages through snapshots, optionally of one volume or one snapshot ID.
type ListSnapshotsRequest struct {
	MaxEntries     int32
	StartingToken  string
	SourceVolumeID string
	SnapshotID     string
	Secrets        spec.Secrets
}

// GetSnapshotRequest asks a controller with GET_SNAPSHOT about one snapshot.
type GetSnapshotRequest struct {
	SnapshotID string
	Secrets    spec.Secrets
}

// ListSnapshotsResponse is one page of snapshots.
type ListSnapshotsResponse struct {
	Snapshots []Snapshot `json:"snapshots"`
	NextToken string     `json:"next_token,omitempty"`
}

// ControllerExpandVolumeRequest grows a volume on the controller.
type ControllerExpandVolumeRequest struct {
	VolumeID    string
	CapacityMin int64
	CapacityMax int64
	Secrets     spec.Secrets
	Capability  *VolumeCapability // optional
}

// ControllerExpandVolumeResponse says the new size and whether the node must expand too.
type ControllerExpandVolumeResponse struct {
	CapacityBytes         int64 `json:"capacity_bytes"`
	NodeExpansionRequired bool  `json:"node_expansion_required"`
}

// NodeStageVolumeRequest stages a volume at a staging path on this node.
type NodeStageVolumeRequest struct {
	VolumeID       string
	PublishContext map[string]string
	StagingPath    string
	Capability     VolumeCapability
	Secrets        spec.Secrets
	VolumeContext  map[string]string
}

// NodeUnstageVolumeRequest undoes NodeStageVolume.
type NodeUnstageVolumeRequest struct {
	VolumeID    string
	StagingPath string
}

// NodePublishVolumeRequest publishes a volume at a target path for one claim.
type NodePublishVolumeRequest struct {
	VolumeID       string
	PublishContext map[string]string
	StagingPath    string // empty when the plugin does not stage
	TargetPath     string
	Capability     VolumeCapability
	ReadOnly       bool
	Secrets        spec.Secrets
	VolumeContext  map[string]string
}

// NodeUnpublishVolumeRequest undoes NodePublishVolume.
type NodeUnpublishVolumeRequest struct {
	VolumeID   string
	TargetPath string
}

// NodeExpandVolumeRequest grows a volume's filesystem on this node.
type NodeExpandVolumeRequest struct {
	VolumeID    string
	VolumePath  string
	CapacityMin int64
	CapacityMax int64
	StagingPath string
	Capability  *VolumeCapability // optional
	Secrets     spec.Secrets
}

// NodeGetVolumeStatsRequest asks for a published or staged volume's usage (csitest records it;
// only the tests send it).
type NodeGetVolumeStatsRequest struct {
	VolumeID    string
	VolumePath  string
	StagingPath string
}
