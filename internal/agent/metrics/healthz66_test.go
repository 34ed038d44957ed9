package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// /metrics now scrubs every label value of the state's secrets (registry.redactor), and
// docs/metrics.md says of the endpoint, which has no authentication, that it "shows plugin
// IDs, volume and plugin counts, never a secret". /healthz, served on the same address to the
// same unauthenticated clients, writes agent.Status as it is: every plugin's ID raw
// (cli/agent.go passes a.Status, and Serve encodes it unscrubbed). A plugin ID that holds a
// secret, which /metrics now shows as [REDACTED], is read whole one path away. Found by helper
// review66.
func TestHealthzShowsNoSecretInThePluginID(t *testing.T) {
	const secret = "hz66-s3cretword"
	ctx := context.Background()
	m, e := observedMem(t, nil)
	pluginsNamedForSecrets(t, e, secret) // plugin "cifs-<secret>", its volume's secrets holding it
	id := "cifs-" + secret
	m.CollectState(e)
	m.PluginProbed(id, true, true, time.Millisecond)
	// What the agent's Status says of the plugin it probes: its ID as registered.
	status := func() agent.Status {
		return agent.Status{Ready: true, Plugins: []agent.PluginStatus{{ID: id, Supervised: true, Pid: 7, Health: "healthy"}}}
	}
	srv := servedStatus(t, ctx, m, status)

	_, metricsBody := httpGet(t, "http://"+srv.Addr()+"/metrics")
	if strings.Contains(metricsBody, secret) {
		t.Fatalf("/metrics shows the secret (the premise of this test is that it does not)")
	}
	_, body := httpGet(t, "http://"+srv.Addr()+"/healthz")
	if strings.Contains(body, secret) {
		t.Errorf("/metrics shows plugin %q as %q, but /healthz, on the same unauthenticated endpoint, shows the secret value %q a volume's secrets hold:\n%s",
			id, "cifs-"+spec.Redacted, secret, body)
	}
}

// Scrubbing label values after the series are made (registry.gather) merges two series whose
// values differ only in a secret into one label set: two plugins "cifs-<user A>" and
// "cifs-<user B>", whose volumes' secrets hold the usernames (as cifs volumes' do), are both
// "cifs-[REDACTED]", and volctl_volumes, volctl_plugin_healthy, volctl_csi_rpcs_total, ... each
// expose two series with one name and one label set. The exposition format forbids that: the
// Prometheus client library refuses to gather such a family ("collected before with the same
// name and label values"), and Prometheus keeps one sample of the two and drops the other
// (a volume count, a plugin's health, an RPC counter going up and down between scrapes as
// which one is kept changes). Found by helper review66.
func TestScrubbedLabelsDoNotMakeDuplicateSeries(t *testing.T) {
	ctx := context.Background()
	m, e := observedMem(t, nil)
	for _, user := range []string{"alice-own3", "bobby-own3"} {
		socket, stop := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())))
		t.Cleanup(stop)
		id := "cifs-" + user
		if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: id, Type: spec.PluginMonolith, Socket: socket}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.CreateVolume(ctx, spec.Volume{ID: "share-" + user[:5], Name: "share-" + user[:5], Type: "csi", PluginID: id,
			Secrets:      spec.Secrets{"username": user, "password": "pw-" + user},
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
			t.Fatal(err)
		}
		m.PluginProbed(id, true, true, time.Millisecond)
	}
	m.CollectState(e)
	fams, err := m.reg.gather(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		seen := map[string]bool{}
		for _, s := range f.metrics {
			var key []string
			for _, l := range s.labels {
				key = append(key, l.name+"="+l.value)
			}
			k := strings.Join(key, ",")
			if seen[k] {
				t.Errorf("family %s exposes two series with the labels {%s}", f.name, k)
			}
			seen[k] = true
		}
	}
}

// servedStatus serves m's /metrics and /healthz, status saying what the agent's Status would,
// on a port of its own until the test ends.
func servedStatus(t *testing.T, ctx context.Context, m *Metrics, status func() agent.Status) *Server {
	t.Helper()
	srv, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, m, status, nil) }()
	t.Cleanup(func() { cancel(); <-served })
	return srv
}
