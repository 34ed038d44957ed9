package engine

import (
	"errors"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// checkPublishable refuses, at admission and before any RPC, a claim the volume's plugin can
// never publish on this host, as its registration and last fingerprint say: admitting it would
// leave a claim that no RPC can move, held until `volume detach --force`. A plugin not
// fingerprinted yet is given the benefit of the doubt; the publish path checks the live
// fingerprint again and rolls back a claim it cannot publish.
func checkPublishable(tx *store.Tx, v store.Volume) error {
	p, err := tx.Plugins().Get(v.PluginID)
	if errors.Is(err, store.ErrNotFound) {
		return notFoundf("volume %q: plugin %q is not registered (volctl plugin register)", v.ID, v.PluginID)
	}
	if err != nil {
		return err
	}
	if p.Type == spec.PluginController {
		return noNodeService(v)
	}
	return nil
}

// noNodeService is the refusal of a claim whose plugin has no node service on this host.
func noNodeService(v store.Volume) error {
	return invalidf("plugin %q has no node service on this host (it is registered as a controller plugin, or serves no node service): volume %q cannot be published here; register the plugin's node service (type \"node\" or \"monolith\") to claim it",
		v.PluginID, v.ID)
}
