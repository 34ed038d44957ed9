package engine

import (
	"fmt"
	"slices"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// checkPublishable refuses, at admission and before any RPC, a claim the volume's plugin can
// never publish on this host, as its registration and last fingerprint say: admitting it would
// leave a claim that no RPC can move, held until `volume detach --force`. A plugin not
// fingerprinted yet is given the benefit of the doubt; the publish path checks the live
// fingerprint again and rolls back a claim it cannot publish. p is the volume's plugin row as
// admission's transaction read it (load), nil when the plugin is not registered.
func checkPublishable(v store.Volume, p *store.Plugin) error {
	if p == nil {
		return notFoundf("volume %q: plugin %q is not registered (volctl plugin register)", v.ID, v.PluginID)
	}
	if p.Type == spec.PluginController {
		return noNodeService(v)
	}
	if p.Type == spec.PluginNode && slices.Contains(p.Fingerprint.PluginCaps, "CONTROLLER_SERVICE") {
		return noControllerHalf(v)
	}
	return nil
}

// noControllerHalf is the refusal of a claim (or a registration) whose plugin advertises
// CONTROLLER_SERVICE while only its node half is registered: nothing can send the controller
// RPCs the driver expects (ControllerPublishVolume before staging, ValidateVolumeCapabilities),
// as Nomad refuses it with "no controllers available for plugin".
func noControllerHalf(v store.Volume) error {
	return controllerHalfMissing(v.PluginID, fmt.Sprintf("attach or validate volume %q", v.ID))
}

// controllerHalfMissing is noControllerHalf for any controller work (what: `create volume "db"`,
// "delete snapshots"): what is missing is not a capability of the driver, which has them, but
// the half of it that serves them, and the refusal says so rather than name the capability.
func controllerHalfMissing(pluginID, what string) error {
	return invalidf("plugin %q advertises CONTROLLER_SERVICE but only its node half is registered: nothing can %s; "+
		"register the plugin's controller half too (a plugin block with the same ID, type \"controller\")", pluginID, what)
}

// needsControllerHalf reports a connection to a plugin that advertises CONTROLLER_SERVICE
// without a controller socket to reach it on.
func needsControllerHalf(c *conn) bool {
	return c.fp.Capabilities.Plugin.ControllerService && !c.fp.Controller
}

// noNodeService is the refusal of a claim whose plugin has no node service on this host.
func noNodeService(v store.Volume) error {
	return invalidf("plugin %q has no node service on this host (it is registered as a controller plugin, or serves no node service): volume %q cannot be published here; register the plugin's node service (type \"node\" or \"monolith\") to claim it",
		v.PluginID, v.ID)
}
