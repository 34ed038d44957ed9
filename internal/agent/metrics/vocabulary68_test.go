package metrics

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/spec"
)

// The scrape scrubbed every label value of the state's secrets (registry.redactLabels), the
// closed vocabularies volctl writes itself included: volctl_volumes' schedulable ("true",
// "false"), volctl_claims' state, the reconcile triggers and results. A volume whose secrets
// hold a value that is one of those words (a CSI secret map such as {tls = "true"}) turned that
// series' label into "[REDACTED] #…": the documented series (schedulable="true") was gone, and
// since the vocabulary is closed and every member is present, the one word masked said, to
// anyone reaching the unauthenticated endpoint, what the secret value is. The CLI changes only
// strings for this reason ("a secret such as `true` cannot break the JSON"): a boolean is no
// secret's place. Found by helper review68.
func TestVocabularyLabelsAreNotScrubbedIntoASecretsTell(t *testing.T) {
	ctx := context.Background()
	m, e := observedMem(t, nil)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "web", Name: "web", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"tls": "true", "mode": "taken", "apikey": "rv68-long-api-key"},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	m.CollectState(e)
	text := exposition(t, m)
	fams := parse(t, text)
	if _, ok := value(fams, "volctl_volumes", map[string]string{"plugin": "mem", "schedulable": "true"}); !ok {
		t.Errorf("no volctl_volumes{plugin=\"mem\",schedulable=\"true\"} series (docs/metrics.md: labels plugin, schedulable); the volume's secret value \"true\" scrubbed the boolean label:\n%s", grepLines(text, "volctl_volumes"))
	}
	if _, ok := value(fams, "volctl_claims", map[string]string{"state": "taken"}); !ok {
		t.Errorf("no volctl_claims{state=\"taken\"} series (docs/metrics.md: every state present); a secret value \"taken\" masks exactly that state, which tells the secret:\n%s", grepLines(text, "volctl_claims{"))
	}
	if strings.Contains(text, "rv68-long-api-key") {
		t.Errorf("the secret itself is shown")
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// /healthz scrubbed every string of agent.Status (engine.RedactWith), its health word included:
// docs/json.md says plugins[].health is one of "healthy", "not ready", "unhealthy" or "". A
// volume whose secrets hold "healthy" made every healthy plugin's health "[REDACTED]": a
// health check reading .plugins[].health == "healthy" failed for a plugin that is healthy,
// and the one word masked of four told the unauthenticated client the secret's value. Found by
// helper review68.
func TestHealthzHealthWordIsNotScrubbed(t *testing.T) {
	ctx := context.Background()
	m, e := observedMem(t, nil)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "web", Name: "web", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"state": "healthy"},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	m.CollectState(e)
	status := func() agent.Status {
		return agent.Status{Ready: true, Plugins: []agent.PluginStatus{{ID: "mem", Supervised: true, Pid: 7, Health: "healthy"}}}
	}
	srv := servedStatus(t, ctx, m, status)
	_, body := httpGet(t, "http://"+srv.Addr()+"/healthz")
	var st agent.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(st.Plugins) != 1 || st.Plugins[0].Health != "healthy" {
		t.Errorf("/healthz of a healthy plugin, with a volume secret \"healthy\" in the state: want plugins[0].health \"healthy\" (docs/json.md), got:\n%s", body)
	}
}
