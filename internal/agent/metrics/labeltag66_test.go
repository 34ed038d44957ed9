package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// pluginsNamedForSecrets registers one plugin "cifs-<user>" per user, each with a volume whose secrets
// hold the user name, so the scrub makes every such plugin ID "cifs-[REDACTED]".
func pluginsNamedForSecrets(t *testing.T, e *engine.Engine, users ...string) {
	t.Helper()
	ctx := context.Background()
	for _, user := range users {
		socket, stop := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())))
		t.Cleanup(stop)
		id := "cifs-" + user
		if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: id, Type: spec.PluginMonolith, Socket: socket}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.CreateVolume(ctx, spec.Volume{ID: "share-" + user, Name: "share-" + user, Type: "csi", PluginID: id,
			Secrets:      spec.Secrets{"username": user, "password": "pw-" + user},
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
			t.Fatal(err)
		}
	}
}

// pluginSeries is family name's label value of label "plugin" -> the series' value.
func pluginSeries(t *testing.T, m *Metrics, name string) map[string]float64 {
	t.Helper()
	fams, err := m.reg.gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.name != name {
			continue
		}
		for _, s := range f.metrics {
			for _, l := range s.labels {
				if l.name == "plugin" {
					out[l.value] += s.value
				}
			}
		}
	}
	return out
}

// redactLabels numbers the series a scrub makes one family by family: in volctl_plugin_healthy,
// where both plugins have a series, "cifs-[REDACTED]" is cifs-alice and "cifs-[REDACTED] (2)"
// cifs-bobby; in volctl_plugin_restarts_total, where only cifs-bobby has one, cifs-bobby is
// "cifs-[REDACTED]". One label value names two plugins on one page, and a query joining two
// families on plugin (restarts of an unhealthy plugin, RPC errors by health) matches bobby's
// restarts with alice's health. Found by helper review66.
func TestScrubbedPluginLabelNamesOnePluginInEveryFamily(t *testing.T) {
	m, e := observedMem(t, nil)
	pluginsNamedForSecrets(t, e, "alice-own4", "bobby-own4")
	m.CollectState(e)
	m.PluginProbed("cifs-alice-own4", false, false, 0)
	m.PluginProbed("cifs-bobby-own4", true, true, time.Millisecond)
	m.PluginRestarted("cifs-bobby-own4", "exited") // bobby alone restarted

	healthy := pluginSeries(t, m, namespace+"_plugin_healthy")
	restarts := pluginSeries(t, m, namespace+"_plugin_restarts_total")
	if len(restarts) != 1 {
		t.Fatalf("restarts: %v, want cifs-bobby's series alone", restarts)
	}
	for label := range restarts {
		if h, ok := healthy[label]; !ok || h != 1 {
			t.Errorf("volctl_plugin_restarts_total names cifs-bobby-own4 (healthy) plugin=%q, but in volctl_plugin_healthy plugin=%q is %v (present %t): "+
				"that is cifs-alice-own4 (unhealthy); the series of one plugin carry different labels family by family (healthy series: %v)",
				label, label, h, ok, healthy)
		}
	}
}

// The scrub's numbers follow the raw values' order among the plugins present at each scrape:
// a plugin registered later whose ID sorts first takes "cifs-[REDACTED]" and every other one
// moves up a number, so the series "cifs-[REDACTED] (2)" changes plugin between two scrapes
// (a counter of one plugin continued by another's: a bogus reset or jump), which the design's
// "a scrape after repeats" promises it does not. Found by helper review66.
func TestScrubbedPluginLabelKeepsItsNumberWhenAPluginIsAdded(t *testing.T) {
	m, e := observedMem(t, nil)
	pluginsNamedForSecrets(t, e, "bobby-own4", "carol-own4")
	m.CollectState(e)
	m.PluginProbed("cifs-bobby-own4", true, true, time.Millisecond)
	m.PluginProbed("cifs-carol-own4", false, false, 0)
	before := pluginSeries(t, m, namespace+"_plugin_healthy")

	pluginsNamedForSecrets(t, e, "alice-own4")
	m.PluginProbed("cifs-alice-own4", false, false, 0)
	after := pluginSeries(t, m, namespace+"_plugin_healthy")
	for label, v := range before {
		if after[label] != v {
			t.Errorf("series volctl_plugin_healthy{plugin=%q} was %v (one plugin) and is %v after another plugin was registered: "+
				"it names another plugin now (before: %v, after: %v)", label, v, after[label], before, after)
		}
	}
}
