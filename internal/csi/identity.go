package csi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/spec"
)

// GetPluginInfo returns the plugin's name, version and manifest.
func (c *Client) GetPluginInfo(ctx context.Context) (PluginInfo, error) {
	ep, err := c.endpointFor(RPCGetPluginInfo)
	if err != nil {
		return PluginInfo{}, err
	}
	return c.pluginInfo(ctx, ep)
}

// pluginInfo asks ep, which fingerprint picks for a split plugin's second socket.
func (c *Client) pluginInfo(ctx context.Context, ep *endpoint) (PluginInfo, error) {
	resp, err := invoke(ctx, c, ep, RPCGetPluginInfo, &csipb.GetPluginInfoRequest{}, ep.identity.GetPluginInfo)
	if err != nil {
		return PluginInfo{}, err
	}
	return PluginInfo{Name: resp.GetName(), VendorVersion: resp.GetVendorVersion(), Manifest: resp.GetManifest()}, nil
}

// SocketDriver is the driver name one of a plugin's sockets answers GetPluginInfo with.
type SocketDriver struct{ Socket, Name string }

// DriverNames asks each configured socket which driver answers on it: the controller's, then a
// split plugin's node socket. GetPluginInfo asks the controller's alone, and a node half
// replaced by another driver behind a socket something else holds went unseen by every check
// that asked it (TestSplitPluginStatusSeesAnotherDriverBehindItsHeldNodeSocket). A split
// plugin's error names the half that failed, as Probe's does.
func (c *Client) DriverNames(ctx context.Context) ([]SocketDriver, error) {
	eps := c.endpoints()
	out := make([]SocketDriver, 0, len(eps))
	for _, ep := range eps {
		info, err := c.pluginInfo(ctx, ep)
		if err != nil {
			return nil, c.halfFailed(eps, ep, err)
		}
		out = append(out, SocketDriver{Socket: ep.socket, Name: info.Name})
	}
	return out, nil
}

// halfFailed is err of endpoint ep among eps, naming the half and its socket when there are two.
func (c *Client) halfFailed(eps []*endpoint, ep *endpoint, err error) error {
	if len(eps) < 2 {
		return err
	}
	half := "node"
	if ep == c.controller {
		half = "controller"
	}
	return fmt.Errorf("the %s half, at socket %s: %w", half, spec.QuoteName(ep.socket), err)
}

// GetPluginCapabilities returns the plugin-wide capabilities.
func (c *Client) GetPluginCapabilities(ctx context.Context) (PluginCapabilities, error) {
	resp, err := send(ctx, c, RPCGetPluginCapabilities, &csipb.GetPluginCapabilitiesRequest{}, csipb.IdentityClient.GetPluginCapabilities)
	if err != nil {
		return PluginCapabilities{}, err
	}
	return pluginCapabilitiesFromCSI(resp.GetCapabilities()), nil
}

// Probe asks every configured socket whether the plugin is healthy. An error means unhealthy;
// ready is false when a socket answered ready=false (still initialising) and true when all
// answered true or left readiness out, which the spec says means ready.
//
// A split plugin's error names the half that failed and its socket: two processes, and "plugin
// X did not answer" alone left the user to guess whose logs to read
// (TestSplitProbeFailureNamesTheHalfThatFailed).
func (c *Client) Probe(ctx context.Context) (ready bool, err error) {
	ready = true
	eps := c.endpoints()
	for _, ep := range eps {
		resp, err := invoke(ctx, c, ep, RPCProbe, &csipb.ProbeRequest{}, ep.identity.Probe)
		if err != nil {
			return false, c.halfFailed(eps, ep, err)
		}
		if r := resp.GetReady(); r != nil && !r.GetValue() {
			ready = false
		}
	}
	return ready, nil
}

// The bounds a plugin's identity is held to (Fingerprint), four times the CSI spec's: a name
// (GetPluginInfo's; CSI: 63 characters) and a node ID (NodeGetInfo's; CSI: 256 bytes) past them
// are refused, and a vendor_version (unbounded in CSI, and only shown) is cut there. Past them,
// up to gRPC's 4 MiB, each was recorded, sent back in RPCs and printed whole: a table row of
// every plugin padded to its width, every refusal naming the driver a megabyte long.
const (
	maxPluginName    = 256
	maxNodeID        = 1024
	MaxVendorVersion = 256
)

// Fingerprint collects everything volctl needs to know about the plugin in one value:
// GetPluginInfo and GetPluginCapabilities, ControllerGetCapabilities when the plugin
// advertises CONTROLLER_SERVICE and a controller socket is configured, and NodeGetCapabilities
// and NodeGetInfo when a node socket is configured. An empty plugin name, or an empty node ID
// from a node service, is an error, as is either past its bound (maxPluginName, maxNodeID).
func (c *Client) Fingerprint(ctx context.Context) (*Fingerprint, error) {
	fp, err := c.fingerprint(ctx)
	if err != nil {
		return nil, fmt.Errorf("fingerprint: %w", err)
	}
	return fp, nil
}

func (c *Client) fingerprint(ctx context.Context) (*Fingerprint, error) {
	info, err := c.GetPluginInfo(ctx)
	if err != nil {
		return nil, err
	}
	if info.Name == "" {
		return nil, errors.New("GetPluginInfo: the plugin reported an empty name, which the CSI spec requires (volctl pins a plugin to its driver's name): fix the plugin")
	}
	if len(info.Name) > maxPluginName {
		return nil, fmt.Errorf("GetPluginInfo: the plugin reported a name of %d bytes (%q), far past the CSI spec's 63 characters "+
			"(volctl takes up to %d bytes): fix the plugin", len(info.Name), spec.Cut(info.Name, 64), maxPluginName)
	}
	// vendor_version, unbounded by CSI, is only shown: kept, cut, whatever its size.
	version := spec.Cut(info.VendorVersion, MaxVendorVersion)
	if c.controller != nil && c.node != nil && c.node != c.controller {
		// Split sockets must belong to one plugin, or capabilities from one would be applied
		// to the other.
		nodeInfo, err := c.pluginInfo(ctx, c.node)
		if err != nil {
			return nil, c.halfFailed(c.endpoints(), c.node, err) // which half hung (TestSplitNodeHalfHungInGetPluginInfoIsNamedByTheFingerprint)
		}
		if nodeInfo.Name != info.Name {
			return nil, &HalvesDiffer{ControllerSocket: c.controller.socket, Controller: info.Name, NodeSocket: c.node.socket, Node: nodeInfo.Name}
		}
		// Two processes, which may run two versions of the driver: the node half's said where
		// it is another, so that one upgraded or downgraded under the claims is seen (a
		// plugin-capabilities event naming both) and shown. Before, only the controller's was
		// read (TestSplitNodeHalfBackAsAnotherVersionIsAnEvent).
		if nodeInfo.VendorVersion != info.VendorVersion {
			version += " (node half: " + spec.Cut(nodeInfo.VendorVersion, MaxVendorVersion) + ")"
		}
	}
	if problem := manifestProblem(info.Manifest); problem != "" {
		return nil, fmt.Errorf("GetPluginInfo: plugin %q reported a manifest with %s: fix the plugin", info.Name, problem)
	}
	fp := &Fingerprint{Provider: info.Name, Version: version, Manifest: info.Manifest}
	if fp.Capabilities.Plugin, err = c.GetPluginCapabilities(ctx); err != nil {
		return nil, err
	}
	if fp.Capabilities.Plugin.ControllerService && c.controller != nil {
		if fp.Capabilities.Controller, err = c.ControllerGetCapabilities(ctx); err != nil {
			return nil, err
		}
		fp.Controller = true
	}
	if c.node != nil {
		if fp.Capabilities.Node, err = c.NodeGetCapabilities(ctx); err != nil {
			return nil, err
		}
		ni, err := c.NodeGetInfo(ctx)
		if err != nil {
			return nil, err
		}
		if ni.NodeID == "" {
			return nil, fmt.Errorf("NodeGetInfo: plugin %q reported an empty node ID, which the CSI spec requires of a node service "+
				"(the node every ControllerPublishVolume names): set its node ID in its configuration or flags and restart it", info.Name)
		}
		if len(ni.NodeID) > maxNodeID {
			// Sent back in every RPC naming the node, recorded with each attachment, shown.
			return nil, fmt.Errorf("NodeGetInfo: plugin %q reported a node ID of %d bytes (%q), far past the CSI spec's 256 bytes "+
				"(volctl takes up to %d): fix the plugin or its configuration", info.Name, len(ni.NodeID), spec.Cut(ni.NodeID, 64), maxNodeID)
		}
		if ni.MaxVolumes < 0 {
			// Read as "no limit", it would let volctl publish past whatever the node allows.
			return nil, fmt.Errorf("NodeGetInfo: plugin %q reported max_volumes_per_node %d, which the CSI spec does not allow (0 is no limit, else a positive count): fix the plugin's configuration and restart it",
				info.Name, ni.MaxVolumes)
		}
		if ni.AccessibleTopology != nil {
			if err := CheckNodeTopology(info.Name, ni.AccessibleTopology.Segments); err != nil {
				return nil, err
			}
		}
		fp.NodeID, fp.MaxVolumes, fp.AccessibleTopology = ni.NodeID, ni.MaxVolumes, ni.AccessibleTopology
		fp.Node = true
	}
	return fp, nil
}

// maxManifest bounds GetPluginInfo's manifest (a map: CSI's 4 KiB of keys and values), four
// times the spec's, as a node's topology is: past it the fingerprint is refused, naming the
// plugin, as a name past its bound is. Before, one up to gRPC's 4 MiB was taken at every
// connection, held with the plugin's fingerprint and printed whole by `plugin probe --json`.
// A manifest cannot be cut as a vendor_version is: a map cut is another map, shown as the
// plugin's.
const maxManifest = spec.MaxPluginMap

// manifestProblem says what of a manifest is past maxManifest, "" when nothing is.
func manifestProblem(m map[string]string) string {
	if n := MapSize(m); n > maxManifest {
		return fmt.Sprintf("%d bytes of keys and values in %d entries, far past the CSI spec's 4 KiB for a map (volctl takes up to %d)", n, len(m), maxManifest)
	}
	return ""
}

// The bounds on a topology a plugin answers with (CheckNodeTopology, and each of a created
// volume's, checkVolumeTopologies), four times the CSI spec's, as the identity's are: a
// segment's key and value are strings (CSI: 128 bytes), the segments a map (CSI: 4 KiB of keys
// and values). A created volume's topologies together are held to maxTopologies (the CSI spec
// does not bound how many: real volumes name a few zones).
const (
	maxTopologyPart = spec.MaxPluginString
	maxTopology     = spec.MaxPluginMap
	maxTopologies   = 4 * maxTopology
)

// CheckNodeTopology refuses a node topology (NodeGetInfo's accessible_topology) of plugin
// provider past its bounds (maxTopologyPart, maxTopology): before, one up to gRPC's 4 MiB was
// recorded with the fingerprint, printed whole by every listing of the plugin and matched
// against every volume's topology at each claim. A topology cannot be cut as a vendor_version
// is: a segment cut is another segment, one left out lets a volume of another zone in.
// Exported for the engine, which does not reuse a fingerprint an older volctl recorded with one.
func CheckNodeTopology(provider string, segments map[string]string) error {
	if problem, _ := segmentsProblem(segments); problem != "" {
		return fmt.Errorf("NodeGetInfo: plugin %q reported an accessible_topology with %s: fix the plugin or its configuration", provider, problem)
	}
	return nil
}

// segmentsProblem says what of a topology's segments is past its bounds, "" when none is, and
// their size (keys and values).
func segmentsProblem(segments map[string]string) (problem string, size int) {
	seen := map[string]string{} // by key folded: the key as given
	for _, k := range slices.Sorted(maps.Keys(segments)) {
		v := segments[k]
		// One key in two cases: the CSI spec has keys case-insensitive ("Zone" and "zone" MUST
		// not both exist), and volctl compares them so (spec.SegmentsWithin): which value holds
		// would depend on how a volume's spec spells the key
		// (TestNodeTopologyWithAKeyInTwoCasesIsJudgedOneWay).
		if other, ok := seen[strings.ToLower(k)]; ok {
			return fmt.Sprintf("segment keys %q and %q, one key in two cases (the CSI spec has topology keys case-insensitive: they MUST not both exist)", other, k), 0
		}
		seen[strings.ToLower(k)] = k
		switch {
		case len(k) > maxTopologyPart:
			return fmt.Sprintf("a segment key of %d bytes (%q), far past the CSI spec's %d bytes (volctl takes up to %d)",
				len(k), spec.Cut(k, 64), spec.MaxCSIString, maxTopologyPart), 0
		case len(v) > maxTopologyPart:
			return fmt.Sprintf("segment %q with a value of %d bytes (%q), far past the CSI spec's %d bytes (volctl takes up to %d)",
				k, len(v), spec.Cut(v, 64), spec.MaxCSIString, maxTopologyPart), 0
		}
		size += len(k) + len(v)
	}
	if size > maxTopology {
		return fmt.Sprintf("%d segments, %d bytes of keys and values, far past the CSI spec's 4 KiB for a map (volctl takes up to %d)",
			len(segments), size, maxTopology), 0
	}
	return "", size
}

// HalvesDiffer is Fingerprint's refusal of split sockets answered by two drivers: the
// controller socket's, and the node socket's, by their GetPluginInfo names. A caller that knows
// which driver is registered tells the half another driver took over (checkSockets).
type HalvesDiffer struct {
	ControllerSocket, Controller string
	NodeSocket, Node             string
}

func (h *HalvesDiffer) Error() string {
	return fmt.Sprintf("controller socket %s serves plugin %q but node socket %s serves %q",
		spec.QuoteName(h.ControllerSocket), h.Controller, spec.QuoteName(h.NodeSocket), h.Node)
}
