package metrics

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/spec"
)

// /healthz of an agent whose state database was replaced (the state dir moved aside, another
// in its place) answered 503 with the agent's status as it was: ready's reason gone, no
// waiting_for, a load balancer or a person reading it told nothing of why. It now says what
// the agent waits for: its restart, the database it opened being no longer the one at its path.
func TestHealthzOfAReplacedStateDatabaseSaysWhy(t *testing.T) {
	m, e := fixture(t)
	srv := servedStatus(t, context.Background(), m, func() agent.Status { return agent.Status{Ready: true} })
	replaceStateDir(t, e.StateDir())

	resp, body := httpGet(t, "http://"+srv.Addr()+"/healthz")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/healthz over a replaced state database: %d\n%s; want 503", resp.StatusCode, body)
	}
	var st agent.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/healthz body: %v\n%s", err, body)
	}
	if st.Ready || !strings.Contains(st.WaitingFor, "restart") || !strings.Contains(st.WaitingFor, "replaced") {
		t.Fatalf("/healthz over a replaced state database: ready %t, waiting_for %q; want not ready, waiting for the agent's restart, saying the database was replaced", st.Ready, st.WaitingFor)
	}
}

// waiting_for's error names the state database's path, which a secret may be part of (a
// state dir named after one): scrubbed as /healthz's plugin IDs are, not shown on an endpoint
// with no authentication. Found by helper review81 (secrets).
func TestHealthzOfAReplacedStateDatabaseShowsNoSecretInItsPath(t *testing.T) {
	m, e := fixture(t)
	secret := filepath.Base(filepath.Dir(e.StateDir())) // the test's temp dir: long enough to scrub
	if _, err := e.CreateVolume(context.Background(), spec.Volume{ID: "s", Name: "s", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets:      spec.Secrets{"token": secret}}); err != nil {
		t.Fatal(err)
	}
	srv := servedStatus(t, context.Background(), m, func() agent.Status { return agent.Status{Ready: true} })
	replaceStateDir(t, e.StateDir())
	resp, body := httpGet(t, "http://"+srv.Addr()+"/healthz")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "restart") {
		t.Fatalf("premise: /healthz over a replaced state database: %d\n%s", resp.StatusCode, body)
	}
	if strings.Contains(body, secret) {
		t.Errorf("/healthz shows the secret %q, part of the state dir's path, in waiting_for:\n%s", secret, body)
	}
}
