package agent

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store/storetest"
)

// TestResolvedProblemLineShowsNoSecretAnotherProcessLetGo: a plugin echoed volume db's secret
// into the ID of a snapshot it made, and its DeleteSnapshot failed, so reconcile reported the
// recorded delete as a problem at each pass, its message naming the snapshot ID. The agent
// logged the warning scrubbed (its log scrubs with the state's secret values), but kept the raw
// message in memory (logProblemsOnce's loggedProblem.message). Another process (`volctl volume
// snapshot deregister`) then forgot the delete, the secret's last holder, so the state let the
// value go; at the next pass the problem was gone and the agent logged "reconcile: resolved:
// <message>" with the secret whole: the agent's scrubber, reading the state then, no longer
// knew it, and the agent had not let it go itself (store.Store.ForgottenHere is the committing
// process's only). docs/architecture.md promises that a plugin echoing a secret into data it
// returns (a snapshot ID) has it "scrubbed where it is *shown*", and that "the agent's [log]
// go[es] through (*Engine).RedactLogger ... which scrubs each record's message"; a value let go
// is still scrubbed by the process whose commit let it go, but here another process did. Found by helper review73.
func TestResolvedProblemLineShowsNoSecretAnotherProcessLetGo(t *testing.T) {
	const secret = "pw73agentres-q9"
	ctx := context.Background()
	var down atomic.Bool
	echo := csitest.EchoSecretsIntoSnapshotIDs(&down)
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())), csitest.WithInterceptor(echo))
	dir := t.TempDir()
	storetest.Seed(t, dir)
	openEngine := func() *engine.Engine {
		e, err := engine.Open(ctx, engine.Config{StateDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	e := openEngine() // the agent's
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	sn, err := e.CreateSnapshot(ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sn.ID, secret) {
		t.Fatalf("the plugin did not echo the secret into the snapshot ID %q (setup)", sn.ID)
	}
	down.Store(true)
	if _, err := e.DeleteSnapshotNoted(ctx, "mem", sn.ID, nil); err == nil {
		t.Fatal("the snapshot delete succeeded with DeleteSnapshot failing (setup)")
	}
	if _, _, err := e.DeregisterVolumeReleasing(ctx, "db", false); err != nil {
		t.Fatal(err)
	}

	var logs iostreams.SyncBuffer
	a := &Agent{e: e, log: e.RedactLogger(slog.New(slog.NewTextHandler(&logs, nil))), problems: map[string]loggedProblem{}}
	rep, _ := e.Reconcile(ctx) // it fails while problems remain
	if len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0].Message, secret) {
		t.Fatalf("reconcile reported no problem naming the snapshot ID with the stuck delete (setup): %+v", rep.Problems)
	}
	a.logProblems("timer", rep.Problems)
	if !strings.Contains(logs.String(), "[REDACTED]") || strings.Contains(logs.String(), secret) {
		t.Fatalf("the warning was not logged scrubbed (setup):\n%s", logs.String())
	}

	// Another volctl forgets the delete: the snapshot ID, the secret's last holder, is gone.
	other := openEngine()
	if _, err := other.DeregisterSnapshot(ctx, "mem", sn.ID); err != nil {
		t.Fatal(err)
	}
	other.Close()

	rep, err = e.Reconcile(ctx)
	if err != nil {
		t.Fatalf("reconcile after the delete was forgotten: %v (setup)", err)
	}
	a.logProblems("timer", rep.Problems)
	out := logs.String()
	if !strings.Contains(out, "resolved") {
		t.Fatalf("the problem gone was not logged resolved (setup):\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Errorf("the agent's log shows the secret the plugin echoed into the snapshot ID:\n%s", out)
	}
}
