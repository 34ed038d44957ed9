package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// EachVolumeShown/VolumesShown now scrub each volume's plugin ID of the state's secrets for
// every list volctl prints (docs/specs.md: a secret that is part of a plugin ID "masks that
// name everywhere"); the agent's /metrics, whose doc says it "shows plugin IDs, volume and
// plugin counts, never a secret" (docs/metrics.md), still reads e.Volumes (stateCollector) and
// labels volctl_volumes with the plugin ID raw: a scraper with no access to the state reads the
// secret. Found by helper review66.
func TestMetricsVolumesFamilyShowsNoSecretInThePluginID(t *testing.T) {
	const secret = "mtr66-s3cretword"
	ctx := context.Background()
	m, e := observedMem(t, nil)
	socket, stop := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())))
	t.Cleanup(stop)
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "csi-" + secret, Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "csi-" + secret,
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	m.CollectState(e)
	text := exposition(t, m)
	if strings.Contains(text, secret) {
		var lines []string
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, secret) {
				lines = append(lines, l)
			}
		}
		t.Errorf("/metrics shows the secret value %q a volume's secrets hold, in its plugin's ID (every volctl list masks it):\n%s", secret, strings.Join(lines, "\n"))
	}
}
