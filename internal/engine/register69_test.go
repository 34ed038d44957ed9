package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A volume registered with a capacity_min its plugin reports no size for (CSI's
// ValidateVolumeCapabilities says none), registered again with capacity_max below that
// capacity_min and capacity_min left out (mergeRegistered keeps the recorded one): the record
// must not hold a requested range whose minimum is above its maximum, which no spec may hold
// (the doc: "so is one below the size the volume has ... before, taken: the record held a
// requested range whose minimum was above its maximum"). The size the volume is known to have
// at least is its capacity_min when no size is recorded (currentSize). It held capacity_min
// 2GiB beside capacity_max 1GiB. Found by helper review69.
func TestRegisterAgainWithACapacityMaxBelowTheRecordedCapacityMin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1"})
	sv := registered("v", "ext-1")
	sv.CapacityMin = 2 << 30
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	before := h.volumeInfo("v")
	again := registered("v", "ext-1")
	again.CapacityMax = 1 << 30
	_, r, err := h.e.RegisterVolumeOutcome(h.ctx, again)
	v := h.volumeInfo("v")
	if err == nil && v.RequestedMax != 0 && v.RequestedMin > v.RequestedMax {
		t.Fatalf("register again with capacity_max 1GiB of a volume recorded at capacity_min %d (size %d): outcome %v %v, err %v; "+
			"the record now holds capacity_min %d above capacity_max %d; want a conflict naming the capacity_min", before.RequestedMin, before.CapacityBytes, r.Outcome, r.Changed, err, v.RequestedMin, v.RequestedMax)
	}
	if err != nil && !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want a conflict", err)
	}
}

// A plugin deregistered with --force while volumes name it keeps the driver it last gave
// (store.LeftPlugin), and "registering another driver under a plugin ID that volumes use is
// refused too, one deregistered with --force included" (docs/architecture.md, "One storage
// volume, one driver"). Registered again with an exec block while nothing serves its socket
// yet (the agent starts it: recorded "not started yet", no fingerprint), the registration
// drops that kept record and the row has no driver pinned: the first connection then pins
// whatever driver the socket serves, and the volumes' RPCs go to it; a NOT_FOUND from that
// driver drops a record of storage the first driver still holds. The kept driver must stay
// pinned until the plugin is fingerprinted; it was not. Found by helper review69.
func TestExecReregisterAfterForcedDeregisterKeepsTheLastDriver(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	execReregisteredAfterForce(t, h, nil)
	// The agent starts the declared command: another driver.
	other := h.restartPlugin(func(c *csitest.MemConfig) { c.Name = "other.csi.volctl.test" })

	derr := h.e.DeleteVolume(h.ctx, "b")
	if _, verr := h.e.Volume(h.ctx, "b"); verr != nil {
		t.Errorf("volume b's record after DeleteVolume went to another driver (delete: %v): %v; its storage on mem.csi.volctl.test is left untracked", derr, verr)
	}
	for _, rpc := range volumeRPCs(other) {
		t.Errorf("the other driver (other.csi.volctl.test) received %s for volumes mem.csi.volctl.test holds", rpc)
	}
	if derr == nil || !errors.Is(derr, ErrConflict) {
		t.Errorf("delete of b through another driver: %v; want a conflict naming mem.csi.volctl.test", derr)
	}
}

// A snapshot being created (its CreateSnapshot cut short: the intent recorded, listed as
// pending, and the plugin may have made it) is a snapshot recorded through the plugin: `plugin
// deregister` without --force is refused while one is ("a plugin deregistration is refused
// while snapshots made through it are recorded": a snapshot is deleted through the driver that
// made it, "refuse by default rather than leave that to chance"). Its source volume
// deregistered (allowed meanwhile, the storage kept), the plugin was deregistered without
// --force and without a word of it, and the next reconcile made the snapshot through the
// plugin the user had just let go of. Found by helper review69.
func TestPluginDeregisterWithASnapshotBeingCreatedIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	name := pendingSnapshot(t, h)
	if _, err := h.e.DeregisterVolume(h.ctx, "db", false); err != nil {
		t.Fatalf("deregister db: %v", err)
	}
	err := h.e.DeregisterPlugin(h.ctx, "mem", false)
	if !errors.Is(err, ErrConflict) || err != nil && !strings.Contains(err.Error(), name) {
		t.Errorf("plugin deregister (no --force) with snapshot %q of it being created: %v; want a conflict naming it", name, err)
	}
	if err != nil {
		return
	}
	rep, _ := h.e.Reconcile(h.ctx)
	for _, a := range rep.Actions {
		if a.Kind == "snapshotted" {
			t.Errorf("after the plugin's deregistration without --force, reconcile: %s", a.Message)
		}
	}
}

// The refusal of a registration of storage another volume records advises, to change that
// volume, "register the spec with id = <that volume>" (TestRegisterOfStorageAnotherVolumeRecordsNamesTheWayOut).
// When that volume is recorded through another plugin ID on the same socket (a socket mate:
// one process, one storage), or in another namespace, the spec so edited still names this
// plugin ID (namespace), and its registration is refused as a change of plugin_id (namespace):
// the advice failed. It names what else the spec needs now (asRecorded). Found by helper
// review69.
func TestRegisterOfStorageRecordedThroughASocketMateAdvisesARegistrationThatWorks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		edit        func(h *harness, first, second *spec.Volume)
		wantInError string // what the refusal must name for its advice to work
	}{
		{"socket mate", func(h *harness, first, second *spec.Volume) {
			h.registerPlugin("mem2", filepath.Dir(h.socket)+"//"+filepath.Base(h.socket))
			second.PluginID = "mem2"
		}, `plugin_id = "mem"`},
		{"namespace", func(h *harness, first, second *spec.Volume) {
			first.Namespace = "prod"
		}, `namespace = "prod"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
			first, second := registered("v", "ext-1"), registered("w", "ext-1")
			tc.edit(h, &first, &second)
			if _, err := h.e.RegisterVolume(h.ctx, first); err != nil {
				t.Fatalf("register v: %v", err)
			}
			_, err := h.e.RegisterVolume(h.ctx, second)
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `register the spec with id = "v"`) {
				t.Fatalf("register w of v's storage: %v; want the conflict advising the spec registered with id = \"v\"", err)
			}
			if strings.Contains(err.Error(), tc.wantInError) {
				return // the advice names what else to change
			}
			second.ID, second.Name = "v", "v" // as advised (a spec without a name: it is the ID)
			if _, aerr := h.e.RegisterVolume(h.ctx, second); aerr != nil {
				t.Errorf("refusal: %v\n\nthe registration it advises (the spec with id = \"v\") fails: %v\nwant the refusal to name %s, or the advice to work", err, aerr, tc.wantInError)
			}
		})
	}
}

// execReregisteredAfterForce deregisters plugin mem with --force while volumes a and b use it,
// stops its process, and registers mem again with an exec block, not started yet (the agent
// is to start it): the new record is pinned to mem's last driver. before runs between the
// forced deregistration and the registration.
func execReregisteredAfterForce(t *testing.T, h *harness, before func()) {
	t.Helper()
	h.create(volume("a"))
	h.create(volume("b"))
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatalf("deregister --force: %v", err)
	}
	h.stopServe()
	h.stopServe = func() {}
	if before != nil {
		before()
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket,
		Exec: &spec.Exec{Command: "/usr/local/bin/mem-csi"}}); err != nil {
		t.Fatalf("register mem again with an exec block, not started yet: %v", err)
	}
}

// The same driver, with the same capabilities, started by the agent after the pinned
// re-registration: its first fingerprint is compared (noteCapabilityChange) with the pinned
// record. My first pin was a fingerprint of the driver's name alone, its At set, with no
// capabilities, version, node ID or topology, and the first real fingerprint was a plugin that
// came back with every capability. The plugin did not change: no plugin-capabilities event, no
// CapabilityChange in `plugin status`. Found by helper review69.
func TestPinnedReregisterFirstFingerprintIsNoCapabilityChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	execReregisteredAfterForce(t, h, nil)
	h.restartPlugin(func(*csitest.MemConfig) {}, "a", "b") // the agent starts the same driver
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Fatalf("plugin status: %v", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if evs := h.eventsOf("plugin-capabilities", "", ""); len(evs) > 0 {
		t.Errorf("the same driver started after the pinned re-registration: plugin-capabilities events %q; want none (it changed nothing)", evs)
	}
	if ch := h.capabilityChange(); ch != nil {
		t.Errorf("plugin status' capability change: lost %v gained %v; want none", ch.Lost, ch.Gained)
	}
}

// checkReregistration refuses another driver only while volumes use the ID ("Registering
// another driver under a plugin ID that volumes use is refused too, one deregistered with
// --force included"), and its refusal advises "deregister the volumes first". The pin made at
// the exec re-registration looks at the kept record alone: the volumes deregistered as
// advised (the kept record is tidied only by a later reconcile), the new exec plugin is still
// pinned to the old driver, and the driver the user meant to run on the socket was refused,
// "the storage of the volumes that use plugin mem is the old driver's" of no volume. Found by
// helper review69.
func TestPinnedReregisterWithoutVolumesLeftTakesTheNewDriver(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	execReregisteredAfterForce(t, h, func() {
		for _, id := range []string{"a", "b"} {
			if _, err := h.e.DeregisterVolume(h.ctx, id, false); err != nil {
				t.Fatalf("deregister volume %s: %v", id, err)
			}
		}
	})
	h.restartPlugin(func(c *csitest.MemConfig) { c.Name = "other.csi.volctl.test" }) // the agent starts the new driver
	if _, err := h.e.CreateVolume(h.ctx, volume("c")); err != nil {
		t.Errorf("create through the new driver of plugin mem, no volume naming mem any more: %v; want it taken", err)
	}
	if ps, err := h.e.PluginStatus(h.ctx, "mem"); err == nil && len(ps) == 1 && ps[0].Provider != "other.csi.volctl.test" {
		t.Errorf("plugin status: provider %q, last error %q; want other.csi.volctl.test", ps[0].Provider, ps[0].LastError)
	}
}

// PluginInfo.FingerprintedAt (`plugin status`'s JSON fingerprinted_at, the dashboard's
// "Fingerprinted N ago") is the last fingerprint's time, zero when never fingerprinted
// (store.Fingerprint.At: "zero: never fingerprinted"). The pin stamps At with the time of the
// registration, so a plugin the agent has not started yet, whose last error says "not started
// yet", was shown fingerprinted just now, with no capabilities. Found by helper review69.
func TestPinnedReregisterIsNotShownFingerprinted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	execReregisteredAfterForce(t, h, nil)
	ps, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil || len(ps) != 1 {
		t.Fatalf("plugin status: %+v, %v", ps, err)
	}
	if !ps[0].FingerprintedAt.IsZero() {
		t.Errorf("plugin status of mem, registered again and not started yet (last error %q): fingerprinted_at %v, capabilities %+v; "+
			"want none (it was never fingerprinted under this registration)", ps[0].LastError, ps[0].FingerprintedAt, ps[0].Capabilities)
	}
}
