package csi

import (
	"encoding/json"
	"slices"
)

// Capability sets are parsed once from the plugin's lists into structs of bools, so callers ask
// c.Controller.PublishUnpublishVolume rather than scanning enums. Duplicates in a plugin's list
// are harmless; capabilities this volctl does not know are kept by name in Unknown. Names and
// the Parse functions convert to and from the CSI enum names, which is what the store keeps.

// capField ties a CSI capability name to the bool that holds it.
type capField struct {
	name string
	on   *bool
}

func capNames(fields []capField, unknown []string) []string {
	out := []string{}
	for _, f := range fields {
		if *f.on {
			out = append(out, f.name)
		}
	}
	rest := slices.Clone(unknown)
	slices.Sort(rest)
	return append(out, slices.Compact(rest)...)
}

// MaxUnknownCapabilities is how many capabilities this volctl does not know a set keeps (in
// Unknown), the first ones listed: they change nothing volctl does and are kept to show. CSI
// defines a score of them per service; a plugin's answer may list half a million (gRPC's 4 MiB
// holds that many), each kept after a search of the ones before it, in every command that
// connects to it, its row in the store and the event of a capability change.
const MaxUnknownCapabilities = 32

// capSet turns the capability called name on, or keeps it in unknown once, while unknown holds
// fewer than MaxUnknownCapabilities.
func capSet(fields []capField, unknown *[]string, name string) {
	if name == "" {
		return
	}
	for _, f := range fields {
		if f.name == name {
			*f.on = true
			return
		}
	}
	if len(*unknown) < MaxUnknownCapabilities && !slices.Contains(*unknown, name) {
		*unknown = append(*unknown, name)
	}
}

// capSetter is a pointer to a capability set, which parseCaps fills in by name.
type capSetter[T any] interface {
	*T
	set(name string)
}

// parseCaps builds a capability set from CSI enum names (the Parse functions).
func parseCaps[T any, P capSetter[T]](names []string) T {
	var c T
	for _, n := range names {
		P(&c).set(n)
	}
	return c
}

// unmarshalCaps reads a capability set back from the JSON list of its names.
func unmarshalCaps[T any, P capSetter[T]](b []byte, c P) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return err
	}
	*c = parseCaps[T, P](names)
	return nil
}

// PluginCapabilities are what GetPluginCapabilities reports.
type PluginCapabilities struct {
	ControllerService                bool
	VolumeAccessibilityConstraints   bool
	GroupControllerService           bool
	SnapshotMetadataService          bool
	SnapshotAccessibilityConstraints bool
	VolumeExpansionOnline            bool
	VolumeExpansionOffline           bool
	Unknown                          []string // names this volctl does not know, kept for display
}

func (c *PluginCapabilities) fields() []capField {
	return []capField{
		{"CONTROLLER_SERVICE", &c.ControllerService},
		{"VOLUME_ACCESSIBILITY_CONSTRAINTS", &c.VolumeAccessibilityConstraints},
		{"GROUP_CONTROLLER_SERVICE", &c.GroupControllerService},
		{"SNAPSHOT_METADATA_SERVICE", &c.SnapshotMetadataService},
		{"SNAPSHOT_ACCESSIBILITY_CONSTRAINTS", &c.SnapshotAccessibilityConstraints},
		{"VOLUME_EXPANSION_ONLINE", &c.VolumeExpansionOnline},
		{"VOLUME_EXPANSION_OFFLINE", &c.VolumeExpansionOffline},
	}
}

// Names lists the capabilities that are on, known ones in spec order, then unknown ones sorted.
func (c PluginCapabilities) Names() []string { return capNames(c.fields(), c.Unknown) }

// ParsePluginCapabilities is the reverse of Names.
func ParsePluginCapabilities(names []string) PluginCapabilities {
	return parseCaps[PluginCapabilities](names)
}

func (c *PluginCapabilities) set(name string) { capSet(c.fields(), &c.Unknown, name) }

// MarshalJSON writes the names, as the store and --json show them.
func (c PluginCapabilities) MarshalJSON() ([]byte, error) { return json.Marshal(c.Names()) }

// UnmarshalJSON reads the names back.
func (c *PluginCapabilities) UnmarshalJSON(b []byte) error { return unmarshalCaps(b, c) }

// ControllerCapabilities are what ControllerGetCapabilities reports.
type ControllerCapabilities struct {
	CreateDeleteVolume        bool
	PublishUnpublishVolume    bool
	ListVolumes               bool
	GetCapacity               bool
	CreateDeleteSnapshot      bool
	ListSnapshots             bool
	CloneVolume               bool
	PublishReadonly           bool
	ExpandVolume              bool
	ListVolumesPublishedNodes bool
	GetVolume                 bool
	SingleNodeMultiWriter     bool
	ModifyVolume              bool
	GetSnapshot               bool
	GetVolumeHealth           bool
	ListVolumeHealth          bool
	Unknown                   []string // names this volctl does not know, kept for display
}

func (c *ControllerCapabilities) fields() []capField {
	return []capField{
		{"CREATE_DELETE_VOLUME", &c.CreateDeleteVolume},
		{"PUBLISH_UNPUBLISH_VOLUME", &c.PublishUnpublishVolume},
		{"LIST_VOLUMES", &c.ListVolumes},
		{"GET_CAPACITY", &c.GetCapacity},
		{"CREATE_DELETE_SNAPSHOT", &c.CreateDeleteSnapshot},
		{"LIST_SNAPSHOTS", &c.ListSnapshots},
		{"CLONE_VOLUME", &c.CloneVolume},
		{"PUBLISH_READONLY", &c.PublishReadonly},
		{"EXPAND_VOLUME", &c.ExpandVolume},
		{"LIST_VOLUMES_PUBLISHED_NODES", &c.ListVolumesPublishedNodes},
		{"GET_VOLUME", &c.GetVolume},
		{"SINGLE_NODE_MULTI_WRITER", &c.SingleNodeMultiWriter},
		{"MODIFY_VOLUME", &c.ModifyVolume},
		{"GET_SNAPSHOT", &c.GetSnapshot},
		{"GET_VOLUME_HEALTH", &c.GetVolumeHealth},
		{"LIST_VOLUME_HEALTH", &c.ListVolumeHealth},
	}
}

// Names lists the capabilities that are on, known ones in spec order, then unknown ones sorted.
func (c ControllerCapabilities) Names() []string { return capNames(c.fields(), c.Unknown) }

// ParseControllerCapabilities is the reverse of Names.
func ParseControllerCapabilities(names []string) ControllerCapabilities {
	return parseCaps[ControllerCapabilities](names)
}

func (c *ControllerCapabilities) set(name string) { capSet(c.fields(), &c.Unknown, name) }

// MarshalJSON writes the names, as the store and --json show them.
func (c ControllerCapabilities) MarshalJSON() ([]byte, error) { return json.Marshal(c.Names()) }

// UnmarshalJSON reads the names back.
func (c *ControllerCapabilities) UnmarshalJSON(b []byte) error { return unmarshalCaps(b, c) }

// NodeCapabilities are what NodeGetCapabilities reports.
type NodeCapabilities struct {
	StageUnstageVolume    bool
	GetVolumeStats        bool
	ExpandVolume          bool
	SingleNodeMultiWriter bool
	VolumeMountGroup      bool
	GetVolumeHealth       bool
	GetStorageHealth      bool
	Unknown               []string // names this volctl does not know, kept for display
}

func (c *NodeCapabilities) fields() []capField {
	return []capField{
		{"STAGE_UNSTAGE_VOLUME", &c.StageUnstageVolume},
		{"GET_VOLUME_STATS", &c.GetVolumeStats},
		{"EXPAND_VOLUME", &c.ExpandVolume},
		{"SINGLE_NODE_MULTI_WRITER", &c.SingleNodeMultiWriter},
		{"VOLUME_MOUNT_GROUP", &c.VolumeMountGroup},
		{"GET_VOLUME_HEALTH", &c.GetVolumeHealth},
		{"GET_STORAGE_HEALTH", &c.GetStorageHealth},
	}
}

// Names lists the capabilities that are on, known ones in spec order, then unknown ones sorted.
func (c NodeCapabilities) Names() []string { return capNames(c.fields(), c.Unknown) }

// ParseNodeCapabilities is the reverse of Names.
func ParseNodeCapabilities(names []string) NodeCapabilities {
	return parseCaps[NodeCapabilities](names)
}

func (c *NodeCapabilities) set(name string) { capSet(c.fields(), &c.Unknown, name) }

// MarshalJSON writes the names, as the store and --json show them.
func (c NodeCapabilities) MarshalJSON() ([]byte, error) { return json.Marshal(c.Names()) }

// UnmarshalJSON reads the names back.
func (c *NodeCapabilities) UnmarshalJSON(b []byte) error { return unmarshalCaps(b, c) }

// Capabilities are all three sets a fingerprint collects.
type Capabilities struct {
	Plugin     PluginCapabilities     `json:"plugin"`
	Controller ControllerCapabilities `json:"controller"`
	Node       NodeCapabilities       `json:"node"`
}
