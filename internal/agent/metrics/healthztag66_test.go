package metrics

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/agent"
)

// docs/metrics.md: a scrubbed label value carries a tag (an HMAC of what it was), "the same in
// every family and at every scrape of one agent, so that two plugins the scrub makes alike stay
// two series; `/healthz` is scrubbed alike". /healthz is scrubbed with the bare redactor
// (engine.RedactWith), no tag: two plugins "cifs-alice" and "cifs-bobby" whose volumes' secrets
// hold the user names are two entries both "cifs-[REDACTED]", one healthy and one not, and
// neither names a series of /metrics ("cifs-[REDACTED] #…"): which plugin /healthz says is
// unhealthy cannot be told, nor matched to its metrics. Found by helper review66.
func TestHealthzTellsApartPluginsTheScrubMakesAlikeAsMetricsDo(t *testing.T) {
	ctx := context.Background()
	m, e := observedMem(t, nil)
	pluginsNamedForSecrets(t, e, "alice-own5", "bobby-own5")
	m.CollectState(e)
	m.PluginProbed("cifs-alice-own5", false, false, 0)
	m.PluginProbed("cifs-bobby-own5", true, true, time.Millisecond)
	status := func() agent.Status {
		return agent.Status{Ready: true, Plugins: []agent.PluginStatus{
			{ID: "cifs-alice-own5", Supervised: true, Pid: 7, Health: "unhealthy"},
			{ID: "cifs-bobby-own5", Supervised: true, Pid: 8, Health: "healthy"},
		}}
	}
	srv := servedStatus(t, ctx, m, status)

	healthy := pluginSeries(t, m, namespace+"_plugin_healthy")
	_, body := httpGet(t, "http://"+srv.Addr()+"/healthz")
	var st agent.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/healthz: %v\n%s", err, body)
	}
	if len(st.Plugins) != 2 {
		t.Fatalf("/healthz lists %d plugins, want 2:\n%s", len(st.Plugins), body)
	}
	if strings.Contains(body, "alice-own5") || strings.Contains(body, "bobby-own5") {
		t.Fatalf("/healthz shows a secret:\n%s", body)
	}
	a, b := st.Plugins[0].ID, st.Plugins[1].ID
	_, aIn := healthy[a]
	_, bIn := healthy[b]
	if a == b || !aIn || !bIn {
		t.Errorf("/healthz shows the two plugins as %q (unhealthy) and %q (healthy); /metrics' volctl_plugin_healthy has them as %v: "+
			"the scrub makes them alike in /healthz, or names there no series of /metrics", a, b, healthy)
	}
}
