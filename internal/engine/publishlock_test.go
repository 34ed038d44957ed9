package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A named pipe planted at a plugin's publish lock path: a claim through the plugin fails at
// once, naming the path and what to do, with nothing sent; like any local failure
// (isLocalRetryable) it is left taken for reconcile, saying so, and once the
// pipe is removed, reconcile publishes it.
func TestClaimWithAPublishLockThatIsNotAFile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	before := len(h.rpcs())
	p, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get("mem") })
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.dir, lockDir, publishLocks(p)[0]+".lock")
	mkfifo(t, path)
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	_, err = h.e.Claim(ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if err == nil || !strings.Contains(err.Error(), path+" is a named pipe") || !strings.Contains(err.Error(), "remove it") ||
		!strings.Contains(err.Error(), "left taken for `volctl reconcile`") {
		t.Fatalf("claim with a named pipe at the publish lock: %v", err)
	}
	if rpcs := h.rpcs()[before:]; len(rpcs) != 0 {
		t.Errorf("RPCs sent for a claim that could not take the publish lock: %v", rpcs)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	if live := h.liveClaims("db"); len(live) != 1 || live[0].State != "published" {
		t.Fatalf("after the pipe was removed, reconcile left: %+v", live)
	}
}

// While the agent holds the plugin's publish lock (counting its mounts to stop it), a claim
// waits for it, says what it waits for, and Ctrl-C ends the wait: the claim is left for
// reconcile, saying so, with nothing sent.
func TestClaimWaitingForThePublishLockIsInterruptible(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	before := len(h.rpcs())
	other, err := newLocker(h.dir) // the agent, another process
	if err != nil {
		t.Fatal(err)
	}
	m, release, err := (&Engine{locks: other, store: h.e.store}).HoldPluginMountsOf(h.ctx, "mem", nil)
	if err != nil || m.Any() {
		t.Fatalf("hold: %+v, %v", m, err)
	}
	defer release()
	ctx, cancel := context.WithCancel(h.ctx)
	var said string
	ctx = WithProgress(ctx, func(step string) {
		if strings.HasPrefix(step, "waiting for the lock") {
			said = step
			cancel()
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the claim waiting for the publish lock did not end on Ctrl-C")
	}
	if !strings.Contains(said, `plugin "mem"`) || !strings.Contains(said, "agent") {
		t.Errorf("the wait says %q; want it to name the plugin and the agent", said)
	}
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted claim: %v", err)
	}
	if rpcs := h.rpcs()[before:]; len(rpcs) != 0 {
		t.Errorf("RPCs sent by a claim interrupted before publishing: %v", rpcs)
	}
}

// A plugin an older volctl stored decomposed ("cafe\u0301") is named in NFC by the agent's
// configuration, which is read so. HoldPluginMountsOf finds it by that name as PluginMounts does
// (byStoredID), and holds its socket's publish lock: a claim through it waits rather than
// having NodeStageVolume or NodePublishVolume sent to a plugin the agent is stopping.
func TestHoldPluginMountsOfAPluginStoredDecomposed(t *testing.T) {
	t.Parallel()
	const stored, typed = "cafe\u0301", "caf\u00e9"
	h := newHarness(t, nil)
	h.registerPlugin(stored, h.socket)
	v := volume("v")
	v.PluginID = stored
	h.create(v)

	claimWhileHoldingMounts(t, h, typed, "v", stored)
}

// A release holds the plugin's publish lock shared for its RPCs, as a publish does: past its
// node steps the store shows no mount (its staging removed, its claim node-detached), and the
// agent, counting the plugin's mounts to restart it past its health timeout
// (HoldPluginMountsOf), took the plugin for idle and stopped it under the release's
// ControllerUnpublishVolume, which found the socket gone and left the claim for reconcile
// (TestAgentDoesNotRestartAnUnhealthyPluginUnderMounts, flaky under load). The agent's count,
// made while the release waits on that RPC, says a publish holds the lock, and once the
// release is done, the plugin is idle.
func TestReleaseHoldsThePublishLockAgainstTheAgentsStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	m, agent, err := h.agentsCountDuringARelease("db", "web-0", "mem")
	if err != nil || !m.Publishing {
		t.Fatalf("the agent's count during the release's ControllerUnpublishVolume = %+v, %v; want the publish lock held (Publishing)", m, err)
	}
	m, hold, err := agent.HoldPluginMountsOf(h.ctx, "mem", nil)
	hold()
	if err != nil || m.Any() {
		t.Fatalf("the agent's count after the release = %+v, %v; want no mounts and the lock free", m, err)
	}
}

// agentsCountDuringARelease releases volumeID's claim of alloc, holds its ControllerUnpublishVolume
// in flight, and returns what the agent (another process: an engine on a locker of its own)
// counts of plugin pluginID's mounts then, that agent, and HoldPluginMountsOf's error.
func (h *harness) agentsCountDuringARelease(volumeID, alloc, pluginID string) (PluginMounts, *Engine, error) {
	h.t.Helper()
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCControllerUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})
	done := make(chan error, 1)
	go func() {
		_, err := h.e.Release(h.ctx, volumeID, alloc)
		done <- err
	}()
	h.waitInFlight(gate, done)
	other, err := newLocker(h.dir)
	if err != nil {
		close(gate)
		h.t.Fatal(err)
	}
	agent := &Engine{locks: other, store: h.e.store}
	m, hold, err := agent.HoldPluginMountsOf(h.ctx, pluginID, nil)
	hold()
	close(gate)
	if rerr := <-done; rerr != nil {
		h.t.Errorf("release: %v", rerr)
	}
	return m, agent, err
}
