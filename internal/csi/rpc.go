// Package csi is the only package in volctl that speaks the CSI protocol. It connects to a
// plugin's controller and node sockets, takes and returns owned Go types built on the spec
// vocabulary, parses capability sets once into structs of bools, and translates gRPC failures
// into *Error values that carry the RPC, the code, a class and a hint a person can act on.
// Secrets and mount flags are sent raw and never appear in its logs or errors.
package csi

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
)

// The CSI RPCs volctl calls, by their short names: what errors, logs and fault injection use.
const (
	RPCGetPluginInfo              = "GetPluginInfo"
	RPCGetPluginCapabilities      = "GetPluginCapabilities"
	RPCProbe                      = "Probe"
	RPCCreateVolume               = "CreateVolume"
	RPCDeleteVolume               = "DeleteVolume"
	RPCControllerPublishVolume    = "ControllerPublishVolume"
	RPCControllerUnpublishVolume  = "ControllerUnpublishVolume"
	RPCValidateVolumeCapabilities = "ValidateVolumeCapabilities"
	RPCListVolumes                = "ListVolumes"
	RPCControllerGetVolume        = "ControllerGetVolume"
	RPCGetCapacity                = "GetCapacity"
	RPCControllerGetCapabilities  = "ControllerGetCapabilities"
	RPCCreateSnapshot             = "CreateSnapshot"
	RPCDeleteSnapshot             = "DeleteSnapshot"
	RPCListSnapshots              = "ListSnapshots"
	RPCGetSnapshot                = "GetSnapshot"
	RPCControllerExpandVolume     = "ControllerExpandVolume"
	RPCNodeStageVolume            = "NodeStageVolume"
	RPCNodeUnstageVolume          = "NodeUnstageVolume"
	RPCNodePublishVolume          = "NodePublishVolume"
	RPCNodeUnpublishVolume        = "NodeUnpublishVolume"
	RPCNodeGetCapabilities        = "NodeGetCapabilities"
	RPCNodeGetInfo                = "NodeGetInfo"
	RPCNodeExpandVolume           = "NodeExpandVolume"
	RPCNodeGetVolumeStats         = "NodeGetVolumeStats"
)

// RPCs lists every RPC the client calls, in the order of the CSI spec.
var RPCs = []string{
	RPCGetPluginInfo, RPCGetPluginCapabilities, RPCProbe,
	RPCCreateVolume, RPCDeleteVolume, RPCControllerPublishVolume, RPCControllerUnpublishVolume,
	RPCValidateVolumeCapabilities, RPCListVolumes, RPCControllerGetVolume, RPCGetCapacity, RPCControllerGetCapabilities,
	RPCCreateSnapshot, RPCDeleteSnapshot, RPCListSnapshots, RPCGetSnapshot, RPCControllerExpandVolume,
	RPCNodeStageVolume, RPCNodeUnstageVolume, RPCNodePublishVolume, RPCNodeUnpublishVolume,
	RPCNodeGetCapabilities, RPCNodeGetInfo, RPCNodeExpandVolume, RPCNodeGetVolumeStats,
}

// Default timeouts, as Nomad and kubelet use them: mount-type work may take minutes, questions
// about the plugin itself should be answered at once.
const (
	DefaultShortTimeout = 5 * time.Second
	DefaultLongTimeout  = 2 * time.Minute
)

// Service is the CSI service an RPC belongs to, which decides the socket it goes to (a split
// plugin serves the controller and the node service on sockets of their own).
type Service int

// The CSI services the client speaks to. The zero Service is none: an RPC not in rpcTable.
const (
	ServiceIdentity Service = iota + 1 // both sockets serve it
	ServiceController
	ServiceNode
)

func (s Service) String() string {
	switch s {
	case ServiceIdentity:
		return "identity"
	case ServiceController:
		return "controller"
	case ServiceNode:
		return "node"
	}
	return fmt.Sprintf("Service(%d)", int(s))
}

// rpcFacts is what volctl knows of one RPC, beyond its name: the one place to look.
type rpcFacts struct {
	// service is the CSI service that declares the RPC, as the CSI protobuf does
	// (TestRPCTableServices holds it to csipb's service descriptors).
	service Service
	// long: the RPC changes state in the plugin or its backend and gets the long timeout; the
	// others (identity, capabilities, info, probe, list, capacity, stats) get the short one.
	long bool
	// notFoundDone: a teardown RPC whose NOT_FOUND means "already gone" (class Ignorable).
	notFoundDone bool
	// exhaustedFinal: an RPC whose RESOURCE_EXHAUSTED the CSI spec's error table says is not to
	// be sent again as it is (ControllerPublishVolume's "max volumes attached" to the node and
	// CreateVolume's "unable to provision in accessible_topology": the caller MUST address it
	// first; CreateSnapshot's "not enough space": the caller SHOULD fail the request): class
	// Final, not Retryable.
	exhaustedFinal bool
	// hints says, for the codes where the CSI spec's error table for this RPC says more than
	// codeHints does, what a person can do about it.
	hints map[codes.Code]string
	// large names the part of the plugin's answer that can grow past gRPC's size limit.
	large string
	// What the request does not carry, as the CSI protobuf has it (TestRPCTableCarries holds
	// them to csipb's request messages): noArgs, nothing at all (the identity and capability
	// questions, NodeGetInfo); noVolume, no volume (no volume_id, no source volume, no
	// volume's name); noSecrets, no secrets. A code whose hint (codeHints) speaks of what the
	// request sent (this volume, its secrets) gets carriesHints' instead: a Probe answered
	// NOT_FOUND was told "the plugin does not know this volume; check its external_id", for
	// an RPC that names none.
	noArgs, noVolume, noSecrets bool
	// noShape: the request carries none of a volume's capabilities (volume_capability or
	// volume_capabilities, where mount options travel), parameters or volume_context, which
	// INVALID_ARGUMENT's hint (codeHints) sends the user to check; noName: it carries no name
	// (only CreateVolume and CreateSnapshot make something by name), of which ALREADY_EXISTS's
	// speaks. TestRPCTableCarries holds them to csipb's request messages too.
	noShape, noName bool
}

// Hints several RPCs share.
const (
	hintVolumeGone   = "the volume is already gone, so there is nothing to undo"
	hintSnapshotGone = "the snapshot is already gone"
	hintSnapshotBusy = "another operation on this snapshot is in progress in the plugin; retry shortly"
	hintPageToken    = "the page token is no longer valid; list again from the start"
	hintListRejected = "the plugin rejected the listing request"
	// hintSnapshotSecrets is a snapshot list's or delete's refusal of its credentials: they
	// are the ones given with --secret, else the source volume's, else none (a snapshot volctl
	// does not record has no volume's), so "check the volume's secrets" misled.
	hintSnapshotSecrets = "the plugin rejected the secrets sent with {rpc} (those given with --secret, else the source volume's, else none): " +
		"pass the ones it needs with --secret KEY=VALUE or --secret-file KEY=FILE"
	hintExpandInvalid = "the plugin rejected the request; check the requested size and that the volume's capabilities support expansion"
	largePage         = "a page of its list"
	// hintSizeOutOfRange is OUT_OF_RANGE's of an RPC that asks for a size (a capacity_range).
	hintSizeOutOfRange = "requested size outside the plugin's supported range"
)

// rpcTable holds the facts of every RPC in RPCs (TestRPCTable keeps them in step).
var rpcTable = map[string]rpcFacts{
	RPCGetPluginInfo:         {service: ServiceIdentity, noShape: true, noName: true, noArgs: true, noVolume: true, noSecrets: true},
	RPCGetPluginCapabilities: {service: ServiceIdentity, noShape: true, noName: true, noArgs: true, noVolume: true, noSecrets: true},
	RPCProbe: {service: ServiceIdentity, noShape: true, noName: true, noArgs: true, noVolume: true, noSecrets: true, hints: map[codes.Code]string{
		codes.FailedPrecondition: "the plugin is unhealthy or misses a dependency; check its logs",
	}},
	RPCCreateVolume: {service: ServiceController, long: true, large: "its volume_context or topology", exhaustedFinal: true, hints: map[codes.Code]string{
		codes.InvalidArgument: "the plugin rejected the request; check the spec's parameters, capabilities and capacity, and that a snapshot or clone source suits this volume",
		codes.NotFound:        "the snapshot or clone source does not exist; check snapshot_id or clone_id",
		codes.AlreadyExists:   "a volume with this name exists with incompatible parameters",
		codes.ResourceExhausted: "the plugin has no room for the volume (its storage full, a quota reached) or cannot provision in the requested topology: " +
			"free space on the plugin's storage (delete volumes or snapshots no longer needed; its message says where), or relax topology_request",
		codes.OutOfRange: "requested capacity outside the plugin's supported range (a volume cannot be smaller than its source)",
	}},
	RPCDeleteVolume: {service: ServiceController, noShape: true, noName: true, long: true, notFoundDone: true, hints: map[codes.Code]string{
		codes.NotFound:           hintVolumeGone,
		codes.FailedPrecondition: "the volume is in use or has snapshots; release its claims and delete its snapshots first",
	}},
	RPCControllerPublishVolume: {service: ServiceController, noName: true, long: true, large: "its publish_context", exhaustedFinal: true, hints: map[codes.Code]string{
		codes.NotFound:           "the plugin does not know the volume or the node; check the volume's external_id and the node ID",
		codes.AlreadyExists:      "the volume is already published to this node with another capability or read-only flag",
		codes.FailedPrecondition: "the volume is published to another node and its access mode is single-node (release the other claim first)",
		codes.ResourceExhausted: "the node reached its max volumes, whatever its NodeGetInfo max_volumes_per_node says, or the plugin has no room to record the attachment (its message says which): " +
			"release a volume on this node (or free space on the plugin's storage), then claim again",
	}},
	RPCControllerUnpublishVolume: {service: ServiceController, noShape: true, noName: true, long: true, notFoundDone: true, hints: map[codes.Code]string{
		codes.NotFound: hintVolumeGone,
	}},
	RPCValidateVolumeCapabilities: {service: ServiceController, noName: true, long: true},
	RPCListVolumes: {service: ServiceController, noShape: true, noName: true, large: largePage, noVolume: true, noSecrets: true, hints: map[codes.Code]string{
		codes.InvalidArgument: hintListRejected,
		codes.Aborted:         hintPageToken,
	}},
	RPCControllerGetVolume: {service: ServiceController, noShape: true, noName: true, large: "its volume_context or topology", noSecrets: true, hints: map[codes.Code]string{
		codes.NotFound: "the plugin no longer has the volume",
	}},
	RPCGetCapacity: {service: ServiceController, noName: true, noVolume: true, noSecrets: true, hints: map[codes.Code]string{
		codes.InvalidArgument: "the plugin rejected the capacity query; check the capabilities, parameters and topology it asks about",
	}},
	RPCControllerGetCapabilities: {service: ServiceController, noShape: true, noName: true, noArgs: true, noVolume: true, noSecrets: true},
	RPCCreateSnapshot: {service: ServiceController, long: true, exhaustedFinal: true, hints: map[codes.Code]string{
		codes.NotFound:          "the source volume does not exist; check its external_id",
		codes.AlreadyExists:     "a snapshot with this name exists for another volume; choose another name",
		codes.ResourceExhausted: "not enough space for the snapshot: free space on the plugin's storage (delete snapshots or volumes no longer needed; its message says where), then snapshot again",
		codes.Aborted:           hintSnapshotBusy,
	}},
	RPCDeleteSnapshot: {service: ServiceController, noShape: true, noName: true, long: true, notFoundDone: true, noVolume: true, hints: map[codes.Code]string{
		codes.InvalidArgument:    "the snapshot may be part of a group snapshot and cannot be deleted alone",
		codes.NotFound:           hintSnapshotGone,
		codes.FailedPrecondition: "the snapshot is in use; delete what was created from it first",
		codes.Aborted:            hintSnapshotBusy,
		codes.Unauthenticated:    hintSnapshotSecrets,
		codes.PermissionDenied:   hintSnapshotSecrets,
	}},
	RPCListSnapshots: {service: ServiceController, noShape: true, noName: true, large: largePage, hints: map[codes.Code]string{
		codes.InvalidArgument:  hintListRejected,
		codes.NotFound:         hintSnapshotGone,
		codes.Aborted:          hintPageToken,
		codes.Unauthenticated:  hintSnapshotSecrets,
		codes.PermissionDenied: hintSnapshotSecrets,
	}},
	RPCGetSnapshot: {service: ServiceController, noShape: true, noName: true, noVolume: true, hints: map[codes.Code]string{
		codes.NotFound:         "the plugin no longer has the snapshot",
		codes.InvalidArgument:  "the plugin rejected the snapshot ID; check it (`volctl volume snapshot list` shows the IDs)",
		codes.Unauthenticated:  hintSnapshotSecrets,
		codes.PermissionDenied: hintSnapshotSecrets,
	}},
	RPCControllerExpandVolume: {service: ServiceController, noName: true, long: true, hints: map[codes.Code]string{
		codes.InvalidArgument:    hintExpandInvalid,
		codes.FailedPrecondition: "the volume is published and the plugin cannot expand it online; release its claims first",
		codes.OutOfRange:         hintSizeOutOfRange,
	}},
	RPCNodeStageVolume: {service: ServiceNode, noName: true, long: true, hints: map[codes.Code]string{
		codes.AlreadyExists:      "the volume is already staged at this path with another capability",
		codes.FailedPrecondition: "the volume does not support the requested capability, or is still in use elsewhere",
	}},
	RPCNodeUnstageVolume: {service: ServiceNode, noShape: true, noName: true, long: true, notFoundDone: true, noSecrets: true, hints: map[codes.Code]string{
		codes.NotFound:           hintVolumeGone,
		codes.FailedPrecondition: "the volume is still published from this staging path; unpublish it first",
	}},
	RPCNodePublishVolume: {service: ServiceNode, noName: true, long: true, hints: map[codes.Code]string{
		codes.AlreadyExists:      "the volume is already published at this target with another capability or read-only flag",
		codes.FailedPrecondition: "the volume may be published elsewhere with an incompatible mode, or is not staged",
	}},
	RPCNodeUnpublishVolume: {service: ServiceNode, noShape: true, noName: true, long: true, notFoundDone: true, noSecrets: true, hints: map[codes.Code]string{
		codes.NotFound: hintVolumeGone,
	}},
	RPCNodeGetCapabilities: {service: ServiceNode, noShape: true, noName: true, noArgs: true, noVolume: true, noSecrets: true},
	RPCNodeGetInfo:         {service: ServiceNode, noShape: true, noName: true, noArgs: true, noVolume: true, noSecrets: true},
	RPCNodeExpandVolume: {service: ServiceNode, noName: true, long: true, hints: map[codes.Code]string{
		codes.InvalidArgument:    hintExpandInvalid,
		codes.FailedPrecondition: "the filesystem cannot be expanded while staged or published",
		codes.OutOfRange:         hintSizeOutOfRange,
		// CSI: no volume with that volume_id on this node, or none at volume_path (hostpath's
		// "not staged or published at"): the mount volctl recorded may be lost.
		codes.NotFound: "the plugin has the volume neither staged nor published at that path on this node, or does not know it; " +
			"`volctl reconcile` restores a claim whose mount was lost, else check its external_id",
	}},
	RPCNodeGetVolumeStats: {service: ServiceNode, noShape: true, noName: true, noSecrets: true, hints: map[codes.Code]string{
		codes.NotFound: "the volume is not at that path; it may not be published",
	}},
}

// codeHints is the hint for a code when the RPC's own facts have none. {rpc}, {plugin},
// {socket} and {timeout} stand for the RPC, the plugin (`plugin "mem"`: Config.Name), its
// socket and the RPC's timeout.
var codeHints = map[codes.Code]string{
	codes.Unavailable:        "is the plugin running and listening on {socket}?",
	codes.DeadlineExceeded:   "{plugin} did not answer within {timeout}; is it overloaded or stuck? check its logs",
	codes.Canceled:           "the plugin cancelled the call; it can be retried",
	codes.Unimplemented:      "the plugin does not implement {rpc}; check its capabilities",
	codes.Unauthenticated:    "the plugin rejected the credentials; check the volume's secrets",
	codes.PermissionDenied:   "the credentials in the volume's secrets lack permission for {rpc}",
	codes.Internal:           "{plugin} failed internally; check its logs",
	codes.Unknown:            "{plugin} failed internally; check its logs",
	codes.DataLoss:           "the plugin reports data loss; check the storage backend",
	codes.InvalidArgument:    "the plugin rejected the request; check the volume's capabilities, parameters, context and mount options",
	codes.NotFound:           "the plugin does not know this volume; check its external_id",
	codes.AlreadyExists:      "an object with this name exists with incompatible parameters",
	codes.FailedPrecondition: "{plugin} is not in a state to do this; check its logs",
	codes.ResourceExhausted:  "{plugin} ran out of a resource (its storage full, a quota reached); free some, then retry",
	codes.Aborted:            "another operation on this volume is in progress in the plugin; retry shortly",
	codes.OutOfRange:         "{plugin} answered that something asked is outside the range it supports; its message says what",
}

// carriesHints replace codeHints' for an RPC whose request does not carry what they speak of
// (rpcFacts.noArgs, noVolume, noSecrets).
const (
	// hintNoArgs: an RPC that sends nothing (Probe, GetPluginInfo, NodeGetInfo, ...) answered
	// with a code that blames what was sent.
	hintNoArgs = "{rpc} sends nothing (no volume, no argument), so this answer is about {plugin} itself, not anything volctl asked: " +
		"check its logs and its configuration"
	// hintNoVolume: an RPC that names no volume answered NOT_FOUND.
	hintNoVolume = "{rpc} names no volume: {plugin} misses something else it needs (its backend, what the request names); check its logs"
	// hintAbortedNoVolume: an RPC that names no volume answered ABORTED.
	hintAbortedNoVolume = "another operation is in progress in {plugin}; retry shortly"
	// hintInvalidNoShape: an RPC that carries no capabilities, parameters or context (a
	// DeleteVolume, a NodeUnpublishVolume, NodeGetVolumeStats) answered INVALID_ARGUMENT.
	hintInvalidNoShape = "{rpc} carries no capabilities, parameters, context or mount options: {plugin} rejected what it does carry " +
		"(an ID, a node or a path; its message says which); check its logs"
	// hintExistsNoName: an RPC that makes nothing by name answered ALREADY_EXISTS.
	hintExistsNoName = "{rpc} makes nothing by name, yet {plugin} answered that something exists already: its message says what; check its logs"
	// hintNoSecrets: an RPC that carries no secrets had its credentials refused.
	hintNoSecrets = "{rpc} carries no secrets (CSI sends none with it), so {plugin} refuses volctl itself: " +
		"check which callers its configuration lets in, and its logs"
)

// carriesHint is the hint of code for an RPC whose request does not carry what codeHints'
// speaks of, or "" when codeHints' fits.
func carriesHint(f rpcFacts, code codes.Code) string {
	switch code {
	case codes.Unauthenticated, codes.PermissionDenied:
		if f.noSecrets {
			return hintNoSecrets
		}
	case codes.NotFound, codes.InvalidArgument, codes.AlreadyExists, codes.OutOfRange:
		switch {
		case f.noArgs:
			return hintNoArgs
		case f.noVolume && code == codes.NotFound:
			return hintNoVolume
		case f.noShape && code == codes.InvalidArgument:
			return hintInvalidNoShape
		case f.noName && code == codes.AlreadyExists:
			return hintExistsNoName
		}
	case codes.Aborted:
		if f.noVolume {
			return hintAbortedNoVolume
		}
	}
	return ""
}

// longTimeoutHint replaces codeHints' DEADLINE_EXCEEDED for a long RPC: the plugin may still
// be working on it.
const longTimeoutHint = "{plugin} did not answer within {timeout}; it may still be working: run `volctl reconcile` later"

// ServiceOf is the service rpc belongs to, which decides the socket it goes to; zero for an RPC
// not in rpcTable.
func ServiceOf(rpc string) Service { return rpcTable[rpc].service }

// IsLong reports whether rpc gets the long timeout.
func IsLong(rpc string) bool { return rpcTable[rpc].long }

// Timeouts bound each RPC. Zero fields take the defaults.
type Timeouts struct {
	Short time.Duration // identity, capabilities, info, probe, list, capacity, stats
	Long  time.Duration // create, delete, publish, stage, their reverses, expand, validate
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Short <= 0 {
		t.Short = DefaultShortTimeout
	}
	if t.Long <= 0 {
		t.Long = DefaultLongTimeout
	}
	return t
}

// For returns the timeout for rpc.
func (t Timeouts) For(rpc string) time.Duration {
	t = t.withDefaults()
	if IsLong(rpc) {
		return t.Long
	}
	return t.Short
}
