// Package csi is the only package in volctl that speaks the CSI protocol. It connects to a
// plugin's controller and node sockets, takes and returns owned Go types built on the spec
// vocabulary, parses capability sets once into structs of bools, and translates gRPC failures
// into *Error values that carry the RPC, the code, a class and a hint a person can act on.
// Secrets and mount flags are sent raw and never appear in its logs or errors.
package csi

import "time"

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
	RPCGetCapacity                = "GetCapacity"
	RPCControllerGetCapabilities  = "ControllerGetCapabilities"
	RPCCreateSnapshot             = "CreateSnapshot"
	RPCDeleteSnapshot             = "DeleteSnapshot"
	RPCListSnapshots              = "ListSnapshots"
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
	RPCValidateVolumeCapabilities, RPCListVolumes, RPCGetCapacity, RPCControllerGetCapabilities,
	RPCCreateSnapshot, RPCDeleteSnapshot, RPCListSnapshots, RPCControllerExpandVolume,
	RPCNodeStageVolume, RPCNodeUnstageVolume, RPCNodePublishVolume, RPCNodeUnpublishVolume,
	RPCNodeGetCapabilities, RPCNodeGetInfo, RPCNodeExpandVolume, RPCNodeGetVolumeStats,
}

// Default timeouts, as Nomad and kubelet use them: mount-type work may take minutes, questions
// about the plugin itself should be answered at once.
const (
	DefaultShortTimeout = 5 * time.Second
	DefaultLongTimeout  = 2 * time.Minute
)

// longRPCs change state in the plugin or its backend and get the long timeout; the others
// (identity, capabilities, info, probe, list, capacity, stats) get the short one.
var longRPCs = map[string]bool{
	RPCCreateVolume:               true,
	RPCDeleteVolume:               true,
	RPCControllerPublishVolume:    true,
	RPCControllerUnpublishVolume:  true,
	RPCValidateVolumeCapabilities: true,
	RPCCreateSnapshot:             true,
	RPCDeleteSnapshot:             true,
	RPCControllerExpandVolume:     true,
	RPCNodeStageVolume:            true,
	RPCNodeUnstageVolume:          true,
	RPCNodePublishVolume:          true,
	RPCNodeUnpublishVolume:        true,
	RPCNodeExpandVolume:           true,
}

// IsLong reports whether rpc gets the long timeout.
func IsLong(rpc string) bool { return longRPCs[rpc] }

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
