package hostpath

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/volctl/volctl/internal/buildinfo"
)

// GetPluginInfo implements csi.IdentityServer.
func (p *Plugin) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: PluginName, VendorVersion: buildinfo.Version}, nil
}

// GetPluginCapabilities implements csi.IdentityServer.
func (p *Plugin) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	service := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		service(csi.PluginCapability_Service_CONTROLLER_SERVICE),
		service(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
		// Expansion only records a number, so it is as safe while the volume is mounted.
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
			Type: csi.PluginCapability_VolumeExpansion_ONLINE,
		}}},
	}}, nil
}

// Probe implements csi.IdentityServer. The plugin is ready as soon as it serves (New has loaded
// its state before the socket exists), until its root is moved or removed under it (no meta/
// there: checkRoot), when every request on its volumes is refused: then it answers not ready,
// and says why in its log once a spell. Before, it answered ready, every view calling it
// healthy (TestProbeOfAPluginWhoseRootMovedIsNotReady). Not an error: an agent restarts a
// plugin that fails its probes, and the restarted one would make an empty root where the old
// one was, which "put it back where it was" would then move the root into.
func (p *Plugin) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if err := p.checkRoot(); err != nil {
		if !p.rootGoneSaid.Swap(true) {
			p.log.Warn("hostpath: answering Probe not ready: "+status.Convert(err).Message(), "root", p.cfg.Root)
		}
		return &csi.ProbeResponse{Ready: wrapperspb.Bool(false)}, nil
	}
	p.rootGoneSaid.Store(false)
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
