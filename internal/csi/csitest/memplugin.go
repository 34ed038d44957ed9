package csitest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/text/unicode/norm"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/internal/wire"
	"github.com/volctl/volctl/internal/spec"
)

// MemConfig configures a MemPlugin. DefaultMemConfig is a full-featured monolith; tests turn
// capabilities off or change the node from there.
type MemConfig struct {
	Name       string
	Version    string
	Manifest   map[string]string
	Plugin     csi.PluginCapabilities
	Controller csi.ControllerCapabilities
	Node       csi.NodeCapabilities
	NodeID     string
	MaxVolumes int64          // per node; 0 is no limit
	Topology   *spec.Topology // the node's accessible topology (set: VOLUME_ACCESSIBILITY_CONSTRAINTS declared)
	Ready      *bool          // what Probe says; nil leaves readiness out, which means ready
	// AccessModes the plugin supports; nil supports all.
	AccessModes []spec.AccessMode
	// PublishContext is what ControllerPublishVolume returns; nil returns {"device": "/dev/mem/<id>"}.
	PublishContext    map[string]string
	AvailableCapacity int64 // GetCapacity's answer before volumes take their share
	DefaultVolumeSize int64 // the size of a volume created with no capacity range
	MaxVolumeSize     int64 // 0 is no limit; above it CreateVolume and expansion are OUT_OF_RANGE
	// CreateTopology, when set, is the accessible topology CreateVolume reports whatever was
	// asked: a plugin that ignores the requisite topology.
	CreateTopology *spec.Topology
	// Granularity, when set, rounds every new volume's size up to a multiple of it, whatever
	// limit_bytes asked: a plugin that allocates in large units and ignores the limit.
	Granularity int64
	// CreateContext, when set, is added to every new volume's volume_context (a plugin whose
	// answer is as large as a test makes it).
	CreateContext map[string]string
	// AnswerWithoutID makes CreateVolume and CreateSnapshot create what was asked and answer
	// without its ID (a plugin that provisions and forgets to say what).
	AnswerWithoutID bool
	// MakeTarget, when set, is what NodePublishVolume does at a new target path instead of
	// making a directory there, or a file for a block volume (a plugin that makes the target a
	// symlink, or a file, or nothing);
	// its error fails the call as INTERNAL. NodeUnpublishVolume removes whatever is there.
	MakeTarget func(target string) error
	// MakeStaging, when set, is what NodeStageVolume does at the staging path instead of
	// mounting there (a plugin that replaces the CO's staging directory with a symlink to a
	// directory of its own); its error fails the call as INTERNAL. NodeUnstageVolume removes a
	// symlink it finds there, as the plugin that made it would.
	MakeStaging func(staging string) error
	// MountRoot, when set, makes the plugin mount as a real one does (root, bind mounts
	// allowed): each volume has a backing directory below MountRoot, which NodeStageVolume
	// bind-mounts at the staging path and NodePublishVolume at the target (from the staging
	// path when the plugin stages; read-only when asked; a block volume's target from a backing
	// file, its device), and NodeUnpublishVolume and
	// NodeUnstageVolume unmount. Unset, the plugin mounts nothing (engine tests, whose mount
	// table is a fake). A MakeTarget replaces the target's mount too. NewMountingMemPlugin sets
	// it for a test.
	MountRoot string
	// MountTargetsOnly, with MountRoot, leaves the staging path unmounted (a plugin that
	// keeps its staging elsewhere, or mounts below the staging path) and bind-mounts the
	// backing directory itself at each target.
	MountTargetsOnly bool
	// PageSize, when positive, is how many entries ListVolumes and ListSnapshots answer with
	// when max_entries leaves it to the plugin (0), the rest on later pages.
	PageSize int32
	// PublishFrom, with MountRoot, when set and answering a path, is what NodePublishVolume
	// bind-mounts at a target (a file-system one, or a block one's file), given the request's
	// staging and target paths, instead of the volume: a plugin that mounts the wrong thing
	// there (the staging path's parent, another volume's staging or device) and answers OK.
	PublishFrom func(staging, target string) string
	// StageFrom, with MountRoot, when set and answering a path, is what NodeStageVolume
	// bind-mounts at the staging path instead of the volume (likewise).
	StageFrom func(staging string) string
	// StageNothing, with MountRoot, makes NodeStageVolume answer OK and mount nothing at the
	// staging path, while NodePublishVolume still bind-mounts the staging path at the target:
	// a plugin whose staging silently did nothing, publishing the bare staging directory.
	StageNothing bool
	// IgnoreReadOnly, with MountRoot, mounts every target read-write, whatever
	// NodePublishVolume's readonly or an "ro" mount flag asks: a plugin that ignores both
	// (and answers OK). Without it, a file-system target is mounted read-only for either, as
	// a plugin that honours them mounts it.
	IgnoreReadOnly bool
	// DeleteLater makes DeleteVolume and DeleteSnapshot answer OK and keep, listed, what they
	// were asked to delete, until a test turns it off (Reconfigure) and the next delete
	// deletes: a plugin that deletes in the background, or says it deleted and did not.
	DeleteLater bool
	// DeleteInUse makes DeleteVolume delete a volume that is published to a node, staged or
	// published on the node, and answer OK, where the plugin otherwise refuses it
	// FAILED_PRECONDITION: a plugin that does not refuse, as the CSI spec says it SHOULD, the
	// delete of a volume in use, and deletes its data from under whoever uses it.
	DeleteInUse bool
	// UnpublishLater makes ControllerUnpublishVolume answer OK and keep the attachment, listed
	// in ListVolumes' and ControllerGetVolume's published_node_ids, until a test turns it off (Reconfigure) and the next
	// unpublish detaches: a plugin that detaches in the background, or says it detached and
	// did not.
	UnpublishLater bool
	// StageFromAttachment makes NodePublishVolume refuse, FAILED_PRECONDITION, a staging made
	// with another publish_context than the one it is given: a plugin whose staging works from
	// the attachment (logs in to the device ControllerPublishVolume named), so a staging made
	// before the attachment, or from another one, is not the attached volume's.
	StageFromAttachment bool
	// PublishChecksAttachment makes a staging plugin's NodePublishVolume insist on the
	// attachment too (FAILED_PRECONDITION without it), as volctl's hostpath plugin does; one that
	// does not stage always does.
	PublishChecksAttachment bool
	// SnapshotIDPrefix is put before a snapshot's name to make its ID (none: the ID is the
	// name), as plugins whose IDs are not the names asked for do.
	SnapshotIDPrefix string
	// FoldIDs makes the plugin find a volume or snapshot by an ID that differs from its own
	// only in case, Unicode normalisation (compatibility forms too), invisible characters or
	// surrounding white space (foldForm; DeleteVolume and
	// DeleteSnapshot, and the volume AnswerCreateWith or snapshot AnswerSnapshotWith names,
	// which CreateVolume or CreateSnapshot then answers under the spelling given): a plugin on
	// a case-insensitive backend, or one that trims and normalises what it is sent.
	FoldIDs bool
	// ReuseIDs gives a new volume the lowest vol-N no volume holds, an ID a deleted volume had
	// (a storage array's LUN numbers, a pool's slots): an honest plugin whose IDs outlive
	// nothing, where the default never gives an ID twice.
	ReuseIDs bool
}

// DefaultMemConfig returns a monolith with the controller (create/delete, publish, list,
// capacity, snapshots, clone, expand) and node (stage, stats, expand) capabilities on.
func DefaultMemConfig() MemConfig {
	return MemConfig{
		Name:    "mem.csi.volctl.test",
		Version: "1.0.0",
		Plugin:  csi.PluginCapabilities{ControllerService: true, VolumeExpansionOnline: true},
		Controller: csi.ControllerCapabilities{
			CreateDeleteVolume: true, PublishUnpublishVolume: true, ListVolumes: true, GetCapacity: true,
			CreateDeleteSnapshot: true, ListSnapshots: true, CloneVolume: true, ExpandVolume: true,
			ListVolumesPublishedNodes: true, PublishReadonly: true,
		},
		Node:              csi.NodeCapabilities{StageUnstageVolume: true, GetVolumeStats: true, ExpandVolume: true},
		NodeID:            "mem-node-1",
		AvailableCapacity: 1 << 40,
		DefaultVolumeSize: 1 << 30,
	}
}

// Call is one request the plugin received, as the owned type the client sends
// (csi.NodePublishVolumeRequest, ...; nil for RPCs that take no arguments), and the code it
// answered with.
type Call struct {
	RPC     string
	Request any
	Code    codes.Code
}

// Service names one CSI service, to serve a MemPlugin's services on separate sockets: the
// client's own (csi.Service), which files each RPC under one of them.
type Service = csi.Service

// The CSI services.
const (
	Identity   = csi.ServiceIdentity
	Controller = csi.ServiceController
	Node       = csi.ServiceNode
)

// MemPlugin is an in-memory CSI plugin: it keeps volumes, snapshots, controller publications,
// stagings and node publications with the semantics the CSI spec asks of a real plugin, and
// records every request. It mounts nothing unless MemConfig.MountRoot is set;
// NodePublishVolume creates the target directory and NodeUnpublishVolume removes it, as a real
// plugin would, so tests can observe paths.
type MemPlugin struct {
	mu        sync.Mutex
	cfg       MemConfig
	volumes   map[string]*memVolume
	snapshots map[string]*csi.Snapshot
	calls     []Call
	nextID    int
	server    *memServer
	// createAs, when set, is the volume every CreateVolume answers with (AnswerCreateWith).
	createAs string
	// snapshotAs, when set, is the snapshot every CreateSnapshot answers with
	// (AnswerSnapshotWith).
	snapshotAs string
	// snapshotNoSource leaves source_volume_id out of every CreateSnapshot answer
	// (AnswerSnapshotWithoutSource).
	snapshotNoSource bool
	// expandAs, when not 0, is the capacity every ControllerExpandVolume answers with
	// (AnswerExpandWith).
	expandAs int64
	// nodeRequired makes every ControllerExpandVolume answer node_expansion_required, whatever
	// the node's capabilities (AnswerNodeExpansionRequired).
	nodeRequired bool
	// nodeExpandAs, when not 0, is the capacity every NodeExpandVolume answers with
	// (AnswerNodeExpandWith).
	nodeExpandAs int64
	// expandBase, when not nil, makes every ControllerExpandVolume grow the volume by the
	// difference between the size asked and the volume's size when it was first asked
	// (recorded here by volume ID), however large the volume is already (ExpandByDelta).
	expandBase map[string]int64
	// mounted are the paths the plugin bind-mounted (MountRoot) and has not unmounted yet.
	mounted map[string]bool
}

type memVolume struct {
	vol        csi.Volume
	name       string
	nodes      map[string]memAttachment // controller-published, by node ID
	staging    string
	stagingCap csi.VolumeCapability
	stagingCtx map[string]string    // the publish_context NodeStageVolume was given
	targets    map[string]memTarget // node-published, by target path
}

type memAttachment struct {
	readOnly bool
	cap      csi.VolumeCapability
	context  map[string]string
}

type memTarget struct {
	readOnly bool
	cap      csi.VolumeCapability
}

// NewMemPlugin returns a plugin configured exactly as cfg says (start from DefaultMemConfig).
func NewMemPlugin(cfg MemConfig) *MemPlugin {
	if cfg.Topology != nil || cfg.CreateTopology != nil {
		// It takes topology: a plugin does so with VOLUME_ACCESSIBILITY_CONSTRAINTS, without
		// which volctl sends no topology_request (the CSI spec forbids it).
		cfg.Plugin.VolumeAccessibilityConstraints = true
	}
	m := &MemPlugin{cfg: cfg, volumes: map[string]*memVolume{}, snapshots: map[string]*csi.Snapshot{}}
	m.server = &memServer{m: m}
	return m
}

// Register registers the Identity, Controller and Node services on s.
func (m *MemPlugin) Register(s *grpc.Server) { m.RegisterServices(s) }

// RegisterServices registers only the named services, e.g. Identity and Node for the node half
// of a split plugin; with none named it registers all three.
func (m *MemPlugin) RegisterServices(s *grpc.Server, services ...Service) {
	if len(services) == 0 {
		services = []Service{Identity, Controller, Node}
	}
	for _, svc := range services {
		switch svc {
		case Identity:
			csipb.RegisterIdentityServer(s, m.server)
		case Controller:
			csipb.RegisterControllerServer(s, m.server)
		case Node:
			csipb.RegisterNodeServer(s, m.server)
		}
	}
}

// SetReady changes what Probe reports: nil leaves readiness out.
func (m *MemPlugin) SetReady(ready *bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.Ready = ready
}

// SetNodeID changes the node ID NodeGetInfo reports (and the node the plugin's node service
// acts as), keeping what the plugin holds: a plugin restarted with another node_id.
func (m *MemPlugin) SetNodeID(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.NodeID = id
}

// Reconfigure edits the plugin's config (its capabilities, say), keeping what the plugin holds:
// a plugin restarted with another configuration over the same storage and mounts. Serve it
// again for a client to see the change (a new socket file, so a new fingerprint).
func (m *MemPlugin) Reconfigure(edit func(*MemConfig)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	edit(&m.cfg)
}

// SetAnswerWithoutID turns MemConfig.AnswerWithoutID on or off.
func (m *MemPlugin) SetAnswerWithoutID(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.AnswerWithoutID = on
}

// AddVolume makes the plugin know a volume it did not create, as for `volctl volume register`
// of an existing volume.
func (m *MemPlugin) AddVolume(v csi.Volume) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.volumes[v.ID] = &memVolume{vol: v, name: v.ID}
}

// DropVolume and DropSnapshot remove what the plugin holds as the storage provider's own tools
// would, behind volctl's back (no RPC).
func (m *MemPlugin) DropVolume(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.volumes, id)
}

func (m *MemPlugin) DropSnapshot(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.snapshots, id)
}

// publishReadOnly says a file-system target published as want asks is mounted read-only:
// NodePublishVolume's readonly, or the capability's mount flags ending at "ro"
// (spec.ReadOnlyFlag, as a mount(8) reads them), unless the plugin ignores both.
func (m *MemPlugin) publishReadOnly(want memTarget) bool {
	if m.cfg.IgnoreReadOnly {
		return false
	}
	var flags []string
	if mo := want.cap.MountOptions; mo != nil {
		flags = mo.MountFlags.Plain()
	}
	return want.readOnly || spec.ReadOnlyFlag(flags) >= 0
}

// AddSnapshot puts s among the plugin's snapshots as given, replacing one with its ID: what
// CreateSnapshot under the name s.ID (without SnapshotIDPrefix) and ListSnapshots answer with,
// whatever its fields say (a creation time far off, a negative size, another source), as a
// plugin whose bookkeeping lies would. A zero CreatedAt is answered without a creation_time.
func (m *MemPlugin) AddSnapshot(s csi.Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snapshots[s.ID] = &s
}

// AnswerCreateWith makes the plugin lie about IDs: from now on, every CreateVolume (whatever
// its name) answers with the volume id it already holds, as a buggy plugin that maps two names
// onto one storage volume would, and creates nothing. An empty id ends the lie.
func (m *MemPlugin) AnswerCreateWith(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.createAs = id
}

// AnswerSnapshotWith makes the plugin lie about snapshots: from now on, every CreateSnapshot
// (whatever its name and source) answers with the snapshot id it already holds, and creates
// nothing. An empty id ends the lie.
func (m *MemPlugin) AnswerSnapshotWith(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snapshotAs = id
}

// AnswerSnapshotWithoutSource makes every CreateSnapshot answer leave its snapshot's
// source_volume_id out (the field a check of whose snapshot it is would read), as a plugin
// that fills in only the ID does. false ends it.
func (m *MemPlugin) AnswerSnapshotWithoutSource(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snapshotNoSource = on
}

// AnswerExpandWith makes the plugin lie about expansion: from now on, every
// ControllerExpandVolume answers OK with capacity bytes, whatever was asked, and changes
// nothing. Zero ends the lie.
func (m *MemPlugin) AnswerExpandWith(capacity int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expandAs = capacity
}

// ExpandByDelta makes the plugin's ControllerExpandVolume not idempotent: from now on, every
// call grows the volume by the size asked less the size the volume had at the first call it
// got (a plugin that works out the growth from a size it read once), however large the volume
// is already, and answers the size it grew to. The CSI spec makes the RPC idempotent; a plugin
// that is not grows a volume twice when asked twice. False ends it.
func (m *MemPlugin) ExpandByDelta(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expandBase = nil
	if on {
		m.expandBase = map[string]int64{}
	}
}

// AnswerNodeExpansionRequired makes the controller answer every ControllerExpandVolume with
// node_expansion_required, even when the node service lacks EXPAND_VOLUME (a plugin whose
// halves disagree). False ends it.
func (m *MemPlugin) AnswerNodeExpansionRequired(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodeRequired = on
}

// AnswerNodeExpandWith makes the node lie about expansion: from now on, every NodeExpandVolume
// answers OK with capacity bytes, whatever was asked, and changes nothing. Zero ends the lie.
func (m *MemPlugin) AnswerNodeExpandWith(capacity int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodeExpandAs = capacity
}

// Calls returns every request received so far, in order.
func (m *MemPlugin) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// CallCount returns how many requests of rpc the plugin received.
func (m *MemPlugin) CallCount(rpc string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.calls {
		if c.RPC == rpc {
			n++
		}
	}
	return n
}

// ResetCalls forgets the recorded requests.
func (m *MemPlugin) ResetCalls() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = nil
}

// Requests returns every recorded request of type T (e.g. csi.NodePublishVolumeRequest).
func Requests[T any](m *MemPlugin) []T {
	var out []T
	for _, c := range m.Calls() {
		if r, ok := c.Request.(T); ok {
			out = append(out, r)
		}
	}
	return out
}

// LastRequest returns the last recorded request of type T.
func LastRequest[T any](m *MemPlugin) (T, bool) {
	reqs := Requests[T](m)
	if len(reqs) == 0 {
		var zero T
		return zero, false
	}
	return reqs[len(reqs)-1], true
}

// Volume returns a volume the plugin holds.
func (m *MemPlugin) Volume(id string) (csi.Volume, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.volumes[id]
	if !ok {
		return csi.Volume{}, false
	}
	return v.vol, true
}

// VolumeNames returns the name each volume was created under (CreateVolume's), by ID.
func (m *MemPlugin) VolumeNames() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.volumes))
	for id, v := range m.volumes {
		out[id] = v.name
	}
	return out
}

// Volumes returns every volume, sorted by ID.
func (m *MemPlugin) Volumes() []csi.Volume {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]csi.Volume, 0, len(m.volumes))
	for _, id := range slices.Sorted(maps.Keys(m.volumes)) {
		out = append(out, m.volumes[id].vol)
	}
	return out
}

// Snapshots returns every snapshot, sorted by ID.
func (m *MemPlugin) Snapshots() []csi.Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]csi.Snapshot, 0, len(m.snapshots))
	for _, id := range slices.Sorted(maps.Keys(m.snapshots)) {
		out = append(out, *m.snapshots[id])
	}
	return out
}

// PublishedNodes returns the nodes a volume is controller-published to.
func (m *MemPlugin) PublishedNodes(volumeID string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.volumes[volumeID]; ok {
		return slices.Sorted(maps.Keys(v.nodes))
	}
	return nil
}

// StagingPath returns where a volume is staged, if it is.
func (m *MemPlugin) StagingPath(volumeID string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.volumes[volumeID]; ok && v.staging != "" {
		return v.staging, true
	}
	return "", false
}

// Targets returns the paths a volume is node-published at.
func (m *MemPlugin) Targets(volumeID string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.volumes[volumeID]; ok {
		return slices.Sorted(maps.Keys(v.targets))
	}
	return nil
}

// memServer is MemPlugin's gRPC face; it is unexported so csitest's API shows no protobuf.
type memServer struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedControllerServer
	csipb.UnimplementedNodeServer
	m *MemPlugin
}

// begin locks the plugin and records a request; end records the outcome and unlocks.
func (m *MemPlugin) begin(rpc string, req any) int {
	m.mu.Lock()
	m.calls = append(m.calls, Call{RPC: rpc, Request: req})
	return len(m.calls) - 1
}

func (m *MemPlugin) end(i int, err error) {
	m.calls[i].Code = status.Code(err)
	m.mu.Unlock()
}

// capabilities is a capability set as the plugin answers it; a name the wire does not know (an
// Unknown one a test set) is left out.
func capabilities[C any](names []string, toCSI func(string) (C, error)) []C {
	var out []C
	for _, name := range names {
		if c, err := toCSI(name); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func errorf(code codes.Code, format string, args ...any) error {
	return status.Errorf(code, format, args...)
}

// lookup finds the volume of ID id: by that ID, or with FoldIDs by one the same when case,
// Unicode normalisation and surrounding white space are ignored.
func (m *MemPlugin) lookup(id string) (*memVolume, bool) {
	k, ok := foldFind(m.volumes, id, m.cfg.FoldIDs)
	return m.volumes[k], ok
}

// foldFind returns the key of in that is id, or with fold the first, in order, that is id
// when case, Unicode normalisation and surrounding white space are ignored.
func foldFind[T any](in map[string]T, id string, fold bool) (string, bool) {
	if _, ok := in[id]; ok || !fold || id == "" {
		return id, ok
	}
	folded := foldForm(id)
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if strings.EqualFold(foldForm(k), folded) {
			return k, true
		}
	}
	return "", false
}

// foldForm is what a FoldIDs plugin compares case-insensitively: the ID without the invisible
// characters HFS+ ignores in names (and a soft hyphen, a byte order mark, a variation
// selector), in compatibility composition as ZFS's normalization=formKC keeps names, trimmed.
// It is written apart from spec.StorageIDKey, which it checks.
func foldForm(id string) string {
	id = strings.Map(func(r rune) rune {
		switch {
		case 0x200b <= r && r <= 0x200f, 0x202a <= r && r <= 0x202e, 0x206a <= r && r <= 0x206f, r == 0xfeff, r == 0xad, 0xfe00 <= r && r <= 0xfe0f:
			return -1
		}
		return r
	}, id)
	return strings.TrimSpace(norm.NFKC.String(id))
}

func (m *MemPlugin) volume(id string) (*memVolume, error) {
	if id == "" {
		return nil, errorf(codes.InvalidArgument, "volume_id is required")
	}
	v, ok := m.volumes[id]
	if !ok {
		return nil, errorf(codes.NotFound, "volume %q does not exist", id)
	}
	return v, nil
}

func (m *MemPlugin) checkCapability(vc *csipb.VolumeCapability) error {
	if vc == nil {
		return errorf(codes.InvalidArgument, "volume_capability is required")
	}
	if vc.GetAccessMode().GetMode() == csipb.VolumeCapability_AccessMode_UNKNOWN {
		return errorf(codes.InvalidArgument, "access mode is required")
	}
	if vc.GetAccessType() == nil {
		return errorf(codes.InvalidArgument, "access type (block or mount) is required")
	}
	return nil
}

func (m *MemPlugin) supportsMode(mode spec.AccessMode) bool {
	return m.cfg.AccessModes == nil || slices.Contains(m.cfg.AccessModes, mode)
}

func sameCapability(a, b csi.VolumeCapability) bool {
	if a.Capability != b.Capability {
		return false
	}
	var af, bf string
	var aflags, bflags []string
	if a.MountOptions != nil {
		af, aflags = a.MountOptions.FSType, a.MountOptions.MountFlags.Plain()
	}
	if b.MountOptions != nil {
		bf, bflags = b.MountOptions.FSType, b.MountOptions.MountFlags.Plain()
	}
	return af == bf && slices.Equal(aflags, bflags)
}

func volumeToCSI(v csi.Volume) *csipb.Volume {
	out := &csipb.Volume{
		VolumeId:           v.ID,
		CapacityBytes:      v.CapacityBytes,
		VolumeContext:      v.Context,
		AccessibleTopology: wire.Topologies(v.AccessibleTopology),
	}
	switch {
	case v.SnapshotID != "":
		out.ContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
			Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: v.SnapshotID}}}
	case v.CloneID != "":
		out.ContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{
			Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: v.CloneID}}}
	}
	return out
}

func snapshotToCSI(s *csi.Snapshot) *csipb.Snapshot {
	return &csipb.Snapshot{
		SnapshotId:     s.ID,
		SourceVolumeId: s.SourceVolumeID,
		SizeBytes:      s.SizeBytes,
		CreationTime:   creationTime(s.CreatedAt),
		ReadyToUse:     s.ReadyToUse,
	}
}

// creationTime is a snapshot's creation_time: none for the zero time, else t as it is, in or
// out of the range a Timestamp is valid in.
func creationTime(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return &timestamppb.Timestamp{Seconds: t.Unix(), Nanos: int32(t.Nanosecond())}
}

// page applies max_entries and starting_token (an index) to n sorted entries.
// pageSize is the page size of a list call that asked for maxEntries: MemConfig.PageSize
// when the call leaves it to the plugin. The caller holds m.mu.
func (m *MemPlugin) pageSize(maxEntries int32) int32 {
	if maxEntries == 0 && m.cfg.PageSize > 0 {
		return m.cfg.PageSize
	}
	return maxEntries
}

func page(n int, maxEntries int32, token string) (from, to int, next string, err error) {
	if maxEntries < 0 {
		return 0, 0, "", errorf(codes.InvalidArgument, "max_entries cannot be negative")
	}
	if token != "" {
		from, err = strconv.Atoi(token)
		if err != nil || from < 0 || from > n {
			return 0, 0, "", errorf(codes.Aborted, "starting_token %q is not valid", token)
		}
	}
	to = n
	if maxEntries > 0 && from+int(maxEntries) < n {
		to = from + int(maxEntries)
		next = strconv.Itoa(to)
	}
	return from, to, next, nil
}

// Identity service.

func (s *memServer) GetPluginInfo(ctx context.Context, req *csipb.GetPluginInfoRequest) (resp *csipb.GetPluginInfoResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCGetPluginInfo, nil)
	defer func() { m.end(i, err) }()
	return &csipb.GetPluginInfoResponse{Name: m.cfg.Name, VendorVersion: m.cfg.Version, Manifest: m.cfg.Manifest}, nil
}

func (s *memServer) GetPluginCapabilities(ctx context.Context, req *csipb.GetPluginCapabilitiesRequest) (resp *csipb.GetPluginCapabilitiesResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCGetPluginCapabilities, nil)
	defer func() { m.end(i, err) }()
	return &csipb.GetPluginCapabilitiesResponse{Capabilities: capabilities(m.cfg.Plugin.Names(), wire.PluginCapability)}, nil
}

func (s *memServer) Probe(ctx context.Context, req *csipb.ProbeRequest) (resp *csipb.ProbeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCProbe, nil)
	defer func() { m.end(i, err) }()
	resp = &csipb.ProbeResponse{}
	if m.cfg.Ready != nil {
		resp.Ready = wrapperspb.Bool(*m.cfg.Ready)
	}
	return resp, nil
}

// Controller service.

func (s *memServer) ControllerGetCapabilities(ctx context.Context, req *csipb.ControllerGetCapabilitiesRequest) (resp *csipb.ControllerGetCapabilitiesResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCControllerGetCapabilities, nil)
	defer func() { m.end(i, err) }()
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: capabilities(m.cfg.Controller.Names(), wire.ControllerCapability)}, nil
}

func (s *memServer) CreateVolume(ctx context.Context, req *csipb.CreateVolumeRequest) (resp *csipb.CreateVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCCreateVolume, decodeCreateVolume(req))
	defer func() { m.end(i, err) }()
	defer func() {
		if m.cfg.AnswerWithoutID && resp != nil {
			resp.Volume.VolumeId = ""
		}
	}()
	if !m.cfg.Controller.CreateDeleteVolume {
		return nil, errorf(codes.Unimplemented, "CreateVolume: CREATE_DELETE_VOLUME is off")
	}
	if req.GetName() == "" {
		return nil, errorf(codes.InvalidArgument, "name is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, errorf(codes.InvalidArgument, "volume_capabilities are required")
	}
	for _, vc := range req.GetVolumeCapabilities() {
		if err := m.checkCapability(vc); err != nil {
			return nil, err
		}
		if mode := wire.AccessModeFromCSI(vc.GetAccessMode().GetMode()); !m.supportsMode(mode) {
			return nil, errorf(codes.InvalidArgument, "access mode %s is not supported", mode)
		}
	}
	min, max := req.GetCapacityRange().GetRequiredBytes(), req.GetCapacityRange().GetLimitBytes()
	if max > 0 && min > max {
		return nil, errorf(codes.OutOfRange, "required_bytes %d is above limit_bytes %d", min, max)
	}
	size := min
	if size == 0 {
		size = m.cfg.DefaultVolumeSize
		if max > 0 && size > max {
			size = max
		}
	}
	if g := m.cfg.Granularity; g > 0 && size%g != 0 {
		size += g - size%g
	}
	if m.cfg.MaxVolumeSize > 0 && size > m.cfg.MaxVolumeSize {
		return nil, errorf(codes.OutOfRange, "%d bytes is above the maximum volume size %d", size, m.cfg.MaxVolumeSize)
	}
	if v, ok := m.lookup(m.createAs); ok {
		answer := volumeToCSI(v.vol)
		answer.VolumeId = m.createAs // the spelling given: the same ID unless FoldIDs
		return &csipb.CreateVolumeResponse{Volume: answer}, nil
	}
	src := req.GetVolumeContentSource()
	snapID, cloneID := src.GetSnapshot().GetSnapshotId(), src.GetVolume().GetVolumeId()
	for _, v := range m.volumes {
		if v.name != req.GetName() {
			continue
		}
		// Same name: idempotent when compatible, ALREADY_EXISTS otherwise.
		if v.vol.CapacityBytes < min || (max > 0 && v.vol.CapacityBytes > max && m.cfg.Granularity == 0) ||
			v.vol.SnapshotID != snapID || v.vol.CloneID != cloneID {
			return nil, errorf(codes.AlreadyExists, "volume %q exists with %d bytes and another source", req.GetName(), v.vol.CapacityBytes)
		}
		return &csipb.CreateVolumeResponse{Volume: volumeToCSI(v.vol)}, nil
	}
	switch {
	case snapID != "":
		snap, ok := m.snapshots[snapID]
		if !ok {
			return nil, errorf(codes.NotFound, "snapshot %q does not exist", snapID)
		}
		if size < snap.SizeBytes {
			return nil, errorf(codes.OutOfRange, "%d bytes is smaller than snapshot %q (%d bytes)", size, snapID, snap.SizeBytes)
		}
	case cloneID != "":
		if !m.cfg.Controller.CloneVolume {
			return nil, errorf(codes.InvalidArgument, "cloning is not supported")
		}
		srcVol, ok := m.volumes[cloneID]
		if !ok {
			return nil, errorf(codes.NotFound, "source volume %q does not exist", cloneID)
		}
		if size < srcVol.vol.CapacityBytes {
			return nil, errorf(codes.OutOfRange, "%d bytes is smaller than source volume %q", size, cloneID)
		}
	}
	m.nextID++
	id := fmt.Sprintf("vol-%d", m.nextID)
	for n := 1; m.cfg.ReuseIDs; n++ {
		if _, taken := m.volumes[fmt.Sprintf("vol-%d", n)]; !taken {
			id = fmt.Sprintf("vol-%d", n)
			break
		}
	}
	v := csi.Volume{
		ID:            id,
		CapacityBytes: size,
		Context:       map[string]string{"name": req.GetName()},
		SnapshotID:    snapID,
		CloneID:       cloneID,
	}
	if r := req.GetAccessibilityRequirements(); r != nil {
		if len(r.GetPreferred()) > 0 {
			v.AccessibleTopology = wire.FromTopologies(r.GetPreferred()[:1])
		} else if len(r.GetRequisite()) > 0 {
			v.AccessibleTopology = wire.FromTopologies(r.GetRequisite()[:1])
		}
	} else if m.cfg.Topology != nil {
		v.AccessibleTopology = []spec.Topology{*m.cfg.Topology}
	}
	if m.cfg.CreateTopology != nil {
		v.AccessibleTopology = []spec.Topology{*m.cfg.CreateTopology}
	}
	maps.Copy(v.Context, m.cfg.CreateContext)
	m.volumes[v.ID] = &memVolume{vol: v, name: req.GetName()}
	return &csipb.CreateVolumeResponse{Volume: volumeToCSI(v)}, nil
}

func (s *memServer) DeleteVolume(ctx context.Context, req *csipb.DeleteVolumeRequest) (resp *csipb.DeleteVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCDeleteVolume, csi.DeleteVolumeRequest{VolumeID: req.GetVolumeId(), Secrets: secrets(req.GetSecrets())})
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.CreateDeleteVolume {
		return nil, errorf(codes.Unimplemented, "DeleteVolume: CREATE_DELETE_VOLUME is off")
	}
	if req.GetVolumeId() == "" {
		return nil, errorf(codes.InvalidArgument, "volume_id is required")
	}
	v, ok := m.lookup(req.GetVolumeId())
	if !ok {
		return &csipb.DeleteVolumeResponse{}, nil // deleting twice is fine
	}
	if (len(v.nodes) > 0 || v.staging != "" || len(v.targets) > 0) && !m.cfg.DeleteInUse {
		return nil, errorf(codes.FailedPrecondition, "volume %q is in use", v.vol.ID)
	}
	if m.cfg.DeleteLater {
		return &csipb.DeleteVolumeResponse{}, nil
	}
	delete(m.volumes, v.vol.ID)
	return &csipb.DeleteVolumeResponse{}, nil
}

func (s *memServer) ControllerPublishVolume(ctx context.Context, req *csipb.ControllerPublishVolumeRequest) (resp *csipb.ControllerPublishVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCControllerPublishVolume, decodeControllerPublish(req))
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.PublishUnpublishVolume {
		return nil, errorf(codes.Unimplemented, "ControllerPublishVolume: PUBLISH_UNPUBLISH_VOLUME is off")
	}
	if req.GetNodeId() == "" {
		return nil, errorf(codes.InvalidArgument, "node_id is required")
	}
	if err := m.checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if req.GetReadonly() && !m.cfg.Controller.PublishReadonly {
		// The CSI spec: without PUBLISH_READONLY the CO MUST set readonly to false.
		return nil, errorf(codes.InvalidArgument, "readonly is set but PUBLISH_READONLY is off")
	}
	v, err := m.volume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if req.GetNodeId() != m.cfg.NodeID {
		return nil, errorf(codes.NotFound, "node %q does not exist", req.GetNodeId())
	}
	want := memAttachment{readOnly: req.GetReadonly(), cap: capabilityFromCSI(req.GetVolumeCapability())}
	if got, ok := v.nodes[req.GetNodeId()]; ok {
		if got.readOnly != want.readOnly || !sameCapability(got.cap, want.cap) {
			return nil, errorf(codes.AlreadyExists, "volume %q is published to node %q with another capability or read-only flag", v.vol.ID, req.GetNodeId())
		}
		return &csipb.ControllerPublishVolumeResponse{PublishContext: got.context}, nil
	}
	if m.cfg.MaxVolumes > 0 {
		n := 0
		for _, other := range m.volumes {
			if _, ok := other.nodes[req.GetNodeId()]; ok {
				n++
			}
		}
		if int64(n) >= m.cfg.MaxVolumes {
			return nil, errorf(codes.ResourceExhausted, "node %q has %d volumes attached, its maximum", req.GetNodeId(), n)
		}
	}
	want.context = m.cfg.PublishContext
	if want.context == nil {
		want.context = map[string]string{"device": "/dev/mem/" + v.vol.ID}
	}
	if v.nodes == nil {
		v.nodes = map[string]memAttachment{}
	}
	v.nodes[req.GetNodeId()] = want
	return &csipb.ControllerPublishVolumeResponse{PublishContext: want.context}, nil
}

func (s *memServer) ControllerUnpublishVolume(ctx context.Context, req *csipb.ControllerUnpublishVolumeRequest) (resp *csipb.ControllerUnpublishVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCControllerUnpublishVolume, csi.ControllerUnpublishVolumeRequest{
		VolumeID: req.GetVolumeId(), NodeID: req.GetNodeId(), Secrets: secrets(req.GetSecrets())})
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.PublishUnpublishVolume {
		return nil, errorf(codes.Unimplemented, "ControllerUnpublishVolume: PUBLISH_UNPUBLISH_VOLUME is off")
	}
	v, err := m.volume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if m.cfg.UnpublishLater {
		return &csipb.ControllerUnpublishVolumeResponse{}, nil
	}
	if req.GetNodeId() == "" {
		v.nodes = nil // the spec: an empty node ID unpublishes from every node
	} else {
		delete(v.nodes, req.GetNodeId())
	}
	return &csipb.ControllerUnpublishVolumeResponse{}, nil
}

func (s *memServer) ValidateVolumeCapabilities(ctx context.Context, req *csipb.ValidateVolumeCapabilitiesRequest) (resp *csipb.ValidateVolumeCapabilitiesResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCValidateVolumeCapabilities, decodeValidate(req))
	defer func() { m.end(i, err) }()
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, errorf(codes.InvalidArgument, "volume_capabilities are required")
	}
	if _, err := m.volume(req.GetVolumeId()); err != nil {
		return nil, err
	}
	for _, vc := range req.GetVolumeCapabilities() {
		if err := m.checkCapability(vc); err != nil {
			return nil, err
		}
		if mode := wire.AccessModeFromCSI(vc.GetAccessMode().GetMode()); !m.supportsMode(mode) {
			return &csipb.ValidateVolumeCapabilitiesResponse{Message: fmt.Sprintf("access mode %s is not supported", mode)}, nil
		}
	}
	return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

func (s *memServer) ListVolumes(ctx context.Context, req *csipb.ListVolumesRequest) (resp *csipb.ListVolumesResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCListVolumes, csi.ListVolumesRequest{MaxEntries: req.GetMaxEntries(), StartingToken: req.GetStartingToken()})
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.ListVolumes {
		return nil, errorf(codes.Unimplemented, "ListVolumes: LIST_VOLUMES is off")
	}
	ids := slices.Sorted(maps.Keys(m.volumes))
	from, to, next, err := page(len(ids), m.pageSize(req.GetMaxEntries()), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp = &csipb.ListVolumesResponse{NextToken: next}
	for _, id := range ids[from:to] {
		v := m.volumes[id]
		e := &csipb.ListVolumesResponse_Entry{Volume: volumeToCSI(v.vol)}
		if m.cfg.Controller.ListVolumesPublishedNodes {
			e.Status = &csipb.ListVolumesResponse_VolumeStatus{PublishedNodeIds: slices.Sorted(maps.Keys(v.nodes))}
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

func (s *memServer) ControllerGetVolume(ctx context.Context, req *csipb.ControllerGetVolumeRequest) (resp *csipb.ControllerGetVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCControllerGetVolume, csi.ControllerGetVolumeRequest{VolumeID: req.GetVolumeId()})
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.GetVolume {
		return nil, errorf(codes.Unimplemented, "ControllerGetVolume: GET_VOLUME is off")
	}
	v, err := m.volume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	resp = &csipb.ControllerGetVolumeResponse{Volume: volumeToCSI(v.vol), Status: &csipb.ControllerGetVolumeResponse_VolumeStatus{}}
	if m.cfg.Controller.ListVolumesPublishedNodes {
		resp.Status.PublishedNodeIds = slices.Sorted(maps.Keys(v.nodes))
	}
	return resp, nil
}

func (s *memServer) GetCapacity(ctx context.Context, req *csipb.GetCapacityRequest) (resp *csipb.GetCapacityResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCGetCapacity, decodeGetCapacity(req))
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.GetCapacity {
		return nil, errorf(codes.Unimplemented, "GetCapacity: GET_CAPACITY is off")
	}
	avail := m.cfg.AvailableCapacity
	for _, v := range m.volumes {
		avail -= v.vol.CapacityBytes
	}
	resp = &csipb.GetCapacityResponse{AvailableCapacity: max(avail, 0)}
	if m.cfg.MaxVolumeSize > 0 {
		resp.MaximumVolumeSize = wrapperspb.Int64(m.cfg.MaxVolumeSize)
	}
	return resp, nil
}

func (s *memServer) CreateSnapshot(ctx context.Context, req *csipb.CreateSnapshotRequest) (resp *csipb.CreateSnapshotResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCCreateSnapshot, csi.CreateSnapshotRequest{
		SourceVolumeID: req.GetSourceVolumeId(), Name: req.GetName(), Secrets: secrets(req.GetSecrets()), Parameters: req.GetParameters()})
	defer func() { m.end(i, err) }()
	defer func() {
		if m.cfg.AnswerWithoutID && resp != nil {
			resp.Snapshot.SnapshotId = ""
		}
		if m.snapshotNoSource && resp != nil {
			resp.Snapshot.SourceVolumeId = ""
		}
	}()
	if !m.cfg.Controller.CreateDeleteSnapshot {
		return nil, errorf(codes.Unimplemented, "CreateSnapshot: CREATE_DELETE_SNAPSHOT is off")
	}
	if req.GetName() == "" || req.GetSourceVolumeId() == "" {
		return nil, errorf(codes.InvalidArgument, "name and source_volume_id are required")
	}
	if k, ok := foldFind(m.snapshots, m.snapshotAs, m.cfg.FoldIDs); ok {
		answer := snapshotToCSI(m.snapshots[k])
		answer.SnapshotId = m.snapshotAs // the spelling given: the same ID unless FoldIDs
		return &csipb.CreateSnapshotResponse{Snapshot: answer}, nil
	}
	if snap, ok := m.snapshots[m.cfg.SnapshotIDPrefix+req.GetName()]; ok {
		if snap.SourceVolumeID != req.GetSourceVolumeId() {
			return nil, errorf(codes.AlreadyExists, "snapshot %q exists for volume %q", req.GetName(), snap.SourceVolumeID)
		}
		return &csipb.CreateSnapshotResponse{Snapshot: snapshotToCSI(snap)}, nil
	}
	v, ok := m.volumes[req.GetSourceVolumeId()]
	if !ok {
		return nil, errorf(codes.NotFound, "source volume %q does not exist", req.GetSourceVolumeId())
	}
	// The snapshot's ID is its name (after SnapshotIDPrefix), which keeps CreateSnapshot
	// idempotent by name.
	snap := &csi.Snapshot{
		ID:             m.cfg.SnapshotIDPrefix + req.GetName(),
		SourceVolumeID: v.vol.ID,
		SizeBytes:      v.vol.CapacityBytes,
		CreatedAt:      time.Now().UTC().Truncate(time.Microsecond),
		ReadyToUse:     true,
	}
	m.snapshots[snap.ID] = snap
	return &csipb.CreateSnapshotResponse{Snapshot: snapshotToCSI(snap)}, nil
}

func (s *memServer) DeleteSnapshot(ctx context.Context, req *csipb.DeleteSnapshotRequest) (resp *csipb.DeleteSnapshotResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCDeleteSnapshot, csi.DeleteSnapshotRequest{SnapshotID: req.GetSnapshotId(), Secrets: secrets(req.GetSecrets())})
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.CreateDeleteSnapshot {
		return nil, errorf(codes.Unimplemented, "DeleteSnapshot: CREATE_DELETE_SNAPSHOT is off")
	}
	if req.GetSnapshotId() == "" {
		return nil, errorf(codes.InvalidArgument, "snapshot_id is required")
	}
	if m.cfg.DeleteLater {
		return &csipb.DeleteSnapshotResponse{}, nil
	}
	if k, ok := foldFind(m.snapshots, req.GetSnapshotId(), m.cfg.FoldIDs); ok {
		delete(m.snapshots, k)
	}
	return &csipb.DeleteSnapshotResponse{}, nil
}

func (s *memServer) ListSnapshots(ctx context.Context, req *csipb.ListSnapshotsRequest) (resp *csipb.ListSnapshotsResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCListSnapshots, csi.ListSnapshotsRequest{
		MaxEntries: req.GetMaxEntries(), StartingToken: req.GetStartingToken(), SourceVolumeID: req.GetSourceVolumeId(),
		SnapshotID: req.GetSnapshotId(), Secrets: secrets(req.GetSecrets())})
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.ListSnapshots {
		return nil, errorf(codes.Unimplemented, "ListSnapshots: LIST_SNAPSHOTS is off")
	}
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(m.snapshots)) {
		snap := m.snapshots[id]
		if (req.GetSnapshotId() == "" || id == req.GetSnapshotId()) &&
			(req.GetSourceVolumeId() == "" || snap.SourceVolumeID == req.GetSourceVolumeId()) {
			ids = append(ids, id)
		}
	}
	from, to, next, err := page(len(ids), m.pageSize(req.GetMaxEntries()), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp = &csipb.ListSnapshotsResponse{NextToken: next}
	for _, id := range ids[from:to] {
		resp.Entries = append(resp.Entries, &csipb.ListSnapshotsResponse_Entry{Snapshot: snapshotToCSI(m.snapshots[id])})
	}
	return resp, nil
}

func (s *memServer) GetSnapshot(ctx context.Context, req *csipb.GetSnapshotRequest) (resp *csipb.GetSnapshotResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCGetSnapshot, csi.GetSnapshotRequest{SnapshotID: req.GetSnapshotId(), Secrets: secrets(req.GetSecrets())})
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.GetSnapshot {
		return nil, errorf(codes.Unimplemented, "GetSnapshot: GET_SNAPSHOT is off")
	}
	snap, ok := m.snapshots[req.GetSnapshotId()]
	if !ok {
		return nil, errorf(codes.NotFound, "snapshot %q does not exist", req.GetSnapshotId())
	}
	return &csipb.GetSnapshotResponse{Snapshot: snapshotToCSI(snap)}, nil
}

func (s *memServer) ControllerExpandVolume(ctx context.Context, req *csipb.ControllerExpandVolumeRequest) (resp *csipb.ControllerExpandVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCControllerExpandVolume, decodeControllerExpand(req))
	defer func() { m.end(i, err) }()
	if !m.cfg.Controller.ExpandVolume {
		return nil, errorf(codes.Unimplemented, "ControllerExpandVolume: EXPAND_VOLUME is off")
	}
	if req.GetCapacityRange() == nil {
		return nil, errorf(codes.InvalidArgument, "capacity_range is required")
	}
	v, err := m.volume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	want := req.GetCapacityRange().GetRequiredBytes()
	if lim := req.GetCapacityRange().GetLimitBytes(); (lim > 0 && want > lim) || (m.cfg.MaxVolumeSize > 0 && want > m.cfg.MaxVolumeSize) {
		return nil, errorf(codes.OutOfRange, "%d bytes is outside the supported range", want)
	}
	if len(v.targets) > 0 && !m.cfg.Plugin.VolumeExpansionOnline {
		return nil, errorf(codes.FailedPrecondition, "volume %q is published and online expansion is off", v.vol.ID)
	}
	nodeRequired := m.cfg.Node.ExpandVolume || m.nodeRequired
	if m.expandAs != 0 {
		return &csipb.ControllerExpandVolumeResponse{CapacityBytes: m.expandAs, NodeExpansionRequired: nodeRequired}, nil
	}
	if m.expandBase != nil {
		base, seen := m.expandBase[v.vol.ID]
		if !seen {
			base = v.vol.CapacityBytes
			m.expandBase[v.vol.ID] = base
		}
		v.vol.CapacityBytes += max(want-base, 0)
		return &csipb.ControllerExpandVolumeResponse{CapacityBytes: v.vol.CapacityBytes, NodeExpansionRequired: nodeRequired}, nil
	}
	v.vol.CapacityBytes = max(v.vol.CapacityBytes, want)
	return &csipb.ControllerExpandVolumeResponse{CapacityBytes: v.vol.CapacityBytes, NodeExpansionRequired: nodeRequired}, nil
}

// Node service.

func (s *memServer) NodeGetCapabilities(ctx context.Context, req *csipb.NodeGetCapabilitiesRequest) (resp *csipb.NodeGetCapabilitiesResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCNodeGetCapabilities, nil)
	defer func() { m.end(i, err) }()
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: capabilities(m.cfg.Node.Names(), wire.NodeCapability)}, nil
}

func (s *memServer) NodeGetInfo(ctx context.Context, req *csipb.NodeGetInfoRequest) (resp *csipb.NodeGetInfoResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCNodeGetInfo, nil)
	defer func() { m.end(i, err) }()
	return &csipb.NodeGetInfoResponse{NodeId: m.cfg.NodeID, MaxVolumesPerNode: m.cfg.MaxVolumes, AccessibleTopology: wire.Topology(m.cfg.Topology)}, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func (s *memServer) NodeStageVolume(ctx context.Context, req *csipb.NodeStageVolumeRequest) (resp *csipb.NodeStageVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCNodeStageVolume, decodeNodeStage(req))
	defer func() { m.end(i, err) }()
	if !m.cfg.Node.StageUnstageVolume {
		return nil, errorf(codes.Unimplemented, "NodeStageVolume: STAGE_UNSTAGE_VOLUME is off")
	}
	v, err := m.nodeVolume(req.GetVolumeId(), "staging_target_path", req.GetStagingTargetPath(), req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	if err := m.checkAttached(v, req.GetPublishContext()); err != nil {
		return nil, err
	}
	// The CO creates the staging directory (CSI spec; docs/architecture.md, Claim state machine).
	if !isDir(req.GetStagingTargetPath()) {
		return nil, errorf(codes.FailedPrecondition, "staging path %s is not a directory: the CO must create it", req.GetStagingTargetPath())
	}
	c := capabilityFromCSI(req.GetVolumeCapability())
	switch {
	case v.staging == req.GetStagingTargetPath():
		if !sameCapability(v.stagingCap, c) {
			return nil, errorf(codes.AlreadyExists, "volume %q is staged at %s with another capability", v.vol.ID, v.staging)
		}
	case v.staging != "":
		return nil, errorf(codes.FailedPrecondition, "volume %q is already staged at %s", v.vol.ID, v.staging)
	default:
		if m.cfg.MakeStaging != nil {
			if err := m.cfg.MakeStaging(req.GetStagingTargetPath()); err != nil {
				return nil, errorf(codes.Internal, "stage: %v", err)
			}
		} else if !m.cfg.StageNothing { // which mounts nothing, and records the staging all the same
			if err := m.mountVolume(v, m.stageFrom(req.GetStagingTargetPath()), m.stagingMount(req.GetStagingTargetPath()), false); err != nil {
				return nil, err
			}
		}
		v.staging, v.stagingCap, v.stagingCtx = req.GetStagingTargetPath(), c, req.GetPublishContext()
	}
	return &csipb.NodeStageVolumeResponse{}, nil
}

// checkAttached insists on ControllerPublishVolume before node work when the plugin has the
// capability, and on its publish context being passed along.
func (m *MemPlugin) checkAttached(v *memVolume, publishContext map[string]string) error {
	if !m.cfg.Controller.PublishUnpublishVolume {
		return nil
	}
	att, ok := v.nodes[m.cfg.NodeID]
	if !ok {
		return errorf(codes.FailedPrecondition, "volume %q is not controller-published to node %q", v.vol.ID, m.cfg.NodeID)
	}
	if !maps.Equal(att.context, publishContext) {
		return errorf(codes.InvalidArgument, "publish_context differs from what ControllerPublishVolume returned")
	}
	return nil
}

func (s *memServer) NodeUnstageVolume(ctx context.Context, req *csipb.NodeUnstageVolumeRequest) (resp *csipb.NodeUnstageVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCNodeUnstageVolume, csi.NodeUnstageVolumeRequest{VolumeID: req.GetVolumeId(), StagingPath: req.GetStagingTargetPath()})
	defer func() { m.end(i, err) }()
	if !m.cfg.Node.StageUnstageVolume {
		return nil, errorf(codes.Unimplemented, "NodeUnstageVolume: STAGE_UNSTAGE_VOLUME is off")
	}
	v, err := m.nodeVolume(req.GetVolumeId(), "staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	if v.staging != req.GetStagingTargetPath() {
		return &csipb.NodeUnstageVolumeResponse{}, nil
	}
	if len(v.targets) > 0 {
		return nil, errorf(codes.FailedPrecondition, "volume %q is still published at %v", v.vol.ID, slices.Sorted(maps.Keys(v.targets)))
	}
	if err := m.unmount(v.staging); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(v.staging); m.cfg.MakeStaging != nil && err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if err := os.Remove(v.staging); err != nil {
			return nil, errorf(codes.Internal, "remove the staging link: %v", err)
		}
	}
	v.staging, v.stagingCap, v.stagingCtx = "", csi.VolumeCapability{}, nil
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

func (s *memServer) NodePublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) (resp *csipb.NodePublishVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCNodePublishVolume, decodeNodePublish(req))
	defer func() { m.end(i, err) }()
	target := req.GetTargetPath()
	v, err := m.nodeVolume(req.GetVolumeId(), "target_path", target, req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	if m.cfg.Node.StageUnstageVolume {
		if req.GetStagingTargetPath() == "" {
			return nil, errorf(codes.FailedPrecondition, "staging_target_path is not set and STAGE_UNSTAGE_VOLUME is on")
		}
		if v.staging != req.GetStagingTargetPath() {
			return nil, errorf(codes.FailedPrecondition, "volume %q is not staged at %s", v.vol.ID, req.GetStagingTargetPath())
		}
		if m.cfg.StageFromAttachment && !maps.Equal(v.stagingCtx, req.GetPublishContext()) {
			return nil, errorf(codes.FailedPrecondition, "volume %q is staged at %s from another attachment (publish_context %v, given %v): unstage and stage it again",
				v.vol.ID, v.staging, v.stagingCtx, req.GetPublishContext())
		}
		if m.cfg.PublishChecksAttachment {
			if err := m.checkAttached(v, req.GetPublishContext()); err != nil {
				return nil, err
			}
		}
	} else if err := m.checkAttached(v, req.GetPublishContext()); err != nil {
		return nil, err
	}
	want := memTarget{readOnly: req.GetReadonly(), cap: capabilityFromCSI(req.GetVolumeCapability())}
	if got, ok := v.targets[target]; ok {
		if got.readOnly != want.readOnly || !sameCapability(got.cap, want.cap) {
			return nil, errorf(codes.AlreadyExists, "volume %q is published at %s with another capability or read-only flag", v.vol.ID, target)
		}
		return &csipb.NodePublishVolumeResponse{}, nil
	}
	if want.cap.AccessMode.SingleNode() && len(v.targets) > 0 {
		return nil, errorf(codes.FailedPrecondition, "volume %q is published at %v and its access mode %s allows one publication",
			v.vol.ID, slices.Sorted(maps.Keys(v.targets)), want.cap.AccessMode)
	}
	// The CO creates the target's parent, the plugin the target (CSI spec).
	if !isDir(filepath.Dir(target)) {
		return nil, errorf(codes.FailedPrecondition, "the parent of target path %s is not a directory: the CO must create it", target)
	}
	if m.cfg.MakeTarget != nil {
		if err := m.cfg.MakeTarget(target); err != nil {
			return nil, errorf(codes.Internal, "create target: %v", err)
		}
	} else if want.cap.AttachmentMode == spec.BlockDevice {
		// A block volume is published as its device file: a file at the target, and, when
		// the plugin mounts, the volume's backing file bind-mounted on it.
		if err := makeFile(target); err != nil {
			return nil, errorf(codes.Internal, "create target: %v", err)
		}
		if err := m.mountBlock(v, req.GetStagingTargetPath(), target, want.readOnly && !m.cfg.IgnoreReadOnly); err != nil {
			_ = os.Remove(target)
			return nil, err
		}
	} else if err := os.Mkdir(target, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, errorf(codes.Internal, "create target: %v", err)
	} else if err := m.mountVolume(v, m.publishFrom(req.GetStagingTargetPath(), target), target, m.publishReadOnly(want)); err != nil {
		_ = os.Remove(target)
		return nil, err
	}
	if v.targets == nil {
		v.targets = map[string]memTarget{}
	}
	v.targets[target] = want
	return &csipb.NodePublishVolumeResponse{}, nil
}

func (s *memServer) NodeUnpublishVolume(ctx context.Context, req *csipb.NodeUnpublishVolumeRequest) (resp *csipb.NodeUnpublishVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCNodeUnpublishVolume, csi.NodeUnpublishVolumeRequest{VolumeID: req.GetVolumeId(), TargetPath: req.GetTargetPath()})
	defer func() { m.end(i, err) }()
	v, err := m.nodeVolume(req.GetVolumeId(), "target_path", req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	if _, ok := v.targets[req.GetTargetPath()]; !ok {
		return &csipb.NodeUnpublishVolumeResponse{}, nil
	}
	if err := m.unmount(req.GetTargetPath()); err != nil {
		return nil, err
	}
	if err := os.Remove(req.GetTargetPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, errorf(codes.Internal, "remove target: %v", err)
	}
	delete(v.targets, req.GetTargetPath())
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// inUseAt reports whether path is one of a volume's targets or its staging path.
func (v *memVolume) inUseAt(path string) bool {
	_, ok := v.targets[path]
	return ok || (path != "" && path == v.staging)
}

// nodeVolume checks a node RPC's path argument, named field, then the volume capability when
// the RPC carries one (vc, nil or not), and returns the volume id names.
func (m *MemPlugin) nodeVolume(id, field, path string, vc ...*csipb.VolumeCapability) (*memVolume, error) {
	if path == "" {
		return nil, errorf(codes.InvalidArgument, "%s is required", field)
	}
	for _, c := range vc {
		if err := m.checkCapability(c); err != nil {
			return nil, err
		}
	}
	return m.volume(id)
}

// volumeAt is the volume of a node RPC that names it by ID and volume_path: the path must be
// one of its targets or its staging path.
func (m *MemPlugin) volumeAt(id, path string) (*memVolume, error) {
	v, err := m.nodeVolume(id, "volume_path", path)
	if err != nil {
		return nil, err
	}
	if !v.inUseAt(path) {
		return nil, errorf(codes.NotFound, "volume %q is not at %s", v.vol.ID, path)
	}
	return v, nil
}

func (s *memServer) NodeExpandVolume(ctx context.Context, req *csipb.NodeExpandVolumeRequest) (resp *csipb.NodeExpandVolumeResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCNodeExpandVolume, decodeNodeExpand(req))
	defer func() { m.end(i, err) }()
	if !m.cfg.Node.ExpandVolume {
		return nil, errorf(codes.Unimplemented, "NodeExpandVolume: EXPAND_VOLUME is off")
	}
	v, err := m.volumeAt(req.GetVolumeId(), req.GetVolumePath())
	if err != nil {
		return nil, err
	}
	// A plugin that finds the volume's device through its staging mount fails where the path
	// given is not where the volume is staged.
	if sp := req.GetStagingTargetPath(); sp != "" && v.staging != sp {
		return nil, errorf(codes.FailedPrecondition, "volume %q is not staged at %s", v.vol.ID, sp)
	}
	want := req.GetCapacityRange().GetRequiredBytes()
	if m.cfg.MaxVolumeSize > 0 && want > m.cfg.MaxVolumeSize {
		return nil, errorf(codes.OutOfRange, "%d bytes is above the maximum volume size", want)
	}
	if m.nodeExpandAs != 0 {
		return &csipb.NodeExpandVolumeResponse{CapacityBytes: m.nodeExpandAs}, nil
	}
	if !m.cfg.Controller.ExpandVolume {
		// A node-only expansion: the node grows the volume itself.
		v.vol.CapacityBytes = max(v.vol.CapacityBytes, want)
	}
	return &csipb.NodeExpandVolumeResponse{CapacityBytes: max(v.vol.CapacityBytes, want)}, nil
}

func (s *memServer) NodeGetVolumeStats(ctx context.Context, req *csipb.NodeGetVolumeStatsRequest) (resp *csipb.NodeGetVolumeStatsResponse, err error) {
	m := s.m
	i := m.begin(csi.RPCNodeGetVolumeStats, csi.NodeGetVolumeStatsRequest{
		VolumeID: req.GetVolumeId(), VolumePath: req.GetVolumePath(), StagingPath: req.GetStagingTargetPath()})
	defer func() { m.end(i, err) }()
	if !m.cfg.Node.GetVolumeStats {
		return nil, errorf(codes.Unimplemented, "NodeGetVolumeStats: GET_VOLUME_STATS is off")
	}
	v, err := m.volumeAt(req.GetVolumeId(), req.GetVolumePath())
	if err != nil {
		return nil, err
	}
	const inodes = 1 << 20
	return &csipb.NodeGetVolumeStatsResponse{Usage: []*csipb.VolumeUsage{
		{Unit: csipb.VolumeUsage_BYTES, Total: v.vol.CapacityBytes, Available: v.vol.CapacityBytes},
		{Unit: csipb.VolumeUsage_INODES, Total: inodes, Available: inodes},
	}}, nil
}
