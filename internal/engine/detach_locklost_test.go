package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A volume's lock file removed by hand while `volume detach --force` holds it, waiting for the
// plugin's publish lock (the agent holds it while it counts the plugin's mounts) before its
// ControllerUnpublishVolume: a second volctl takes a new file at the path and claims the
// volume for another alloc, sharing the attachment. Before, the detach went on once it had
// the publish lock: it sent ControllerUnpublishVolume, detaching the volume from under the
// second volctl's claim, and forgot the staging that claim stands on. It checks its lock before
// each step that undoes something and before its last write, and stops, naming the lock file.
func TestLockFileDeletedWhileForcedDetachWaitsStopsTheDetach(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	var p store.Plugin
	h.update(func(tx *store.Tx) error { var err error; p, err = tx.Plugins().Get("mem"); return err })
	// The plugin's publish lock, held exclusively as the agent holds it (HoldPluginMountsOf), by
	// a locker of its own: another process's.
	other, err := newLocker(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	unhold, err := other.all(h.ctx, publishLocks(p), `plugin "mem"'s mounts (the agent)`, false)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unholdOnce := func() { once.Do(unhold) }
	defer unholdOnce()
	waitingFor := func(ch chan struct{}) context.Context {
		var o sync.Once
		return WithProgress(h.ctx, func(step string) {
			if strings.HasPrefix(step, `waiting for the lock on plugin "mem"'s publishes`) {
				o.Do(func() { close(ch) })
			}
		})
	}
	firstWaits, secondWaits := make(chan struct{}), make(chan struct{})
	type result struct {
		res DetachResult
		err error
	}
	first := make(chan result, 1)
	go func() {
		res, err := h.e.Detach(waitingFor(firstWaits), "db", true)
		first <- result{res, err}
	}()
	select {
	case <-firstWaits:
	case r := <-first:
		t.Fatalf("the forced detach ended before it waited for the publish lock: %+v, %v", r.res, r.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the forced detach never waited for the publish lock")
	}
	second, lockPath := h.removeLockThenOpenAnother("db")
	h.mem.ResetCalls()
	claimed := make(chan error, 1)
	go func() {
		_, err := second.Claim(waitingFor(secondWaits), ClaimRequest{VolumeID: "db", Alloc: "web-1"})
		claimed <- err
	}()
	select {
	case <-secondWaits:
	case err := <-claimed:
		unholdOnce()
		t.Fatalf("the second volctl's claim ended before it waited for the publish lock: %v", err)
	case <-time.After(30 * time.Second):
		unholdOnce()
		t.Fatal("the second volctl's claim never waited for the publish lock")
	}
	unholdOnce()
	r := <-first
	if err := <-claimed; err != nil {
		t.Fatalf("the second volctl's claim: %v", err)
	}
	wantLockLost(t, "the forced detach", r.err, lockPath, "db")
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Errorf("ControllerUnpublishVolume sent %d times; want none: the second volctl's claim holds the attachment", n)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("db")); len(nodes) != 1 {
		t.Errorf("the plugin's attachments of db = %v; want the one web-1's claim stands on", nodes)
	}
	if st, ok := h.staging("db"); !ok || !st.ControllerPublished {
		t.Errorf("db's staging = %+v (found %v); want its attachment recorded, web-1's claim holds it", st, ok)
	}
	live := h.liveClaims("db")
	var web1 *store.Claim
	for i := range live {
		if live[i].Alloc == "web-1" {
			web1 = &live[i]
		}
	}
	if web1 == nil || web1.State != store.ClaimPublished {
		t.Errorf("claims of db = %+v; want web-1's published", live)
	}
	if errors.Is(r.err, ErrConflict) {
		t.Errorf("the forced detach's error %v is a conflict; want the lock's loss", r.err)
	}
}
