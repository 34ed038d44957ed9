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
	h.create(volume("v"))
	h.create(volume("b"))
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatalf("deregister --force: %v", err)
	}
	h.stopServe() // the operator stops the old process; the agent is to start the new one
	h.stopServe = func() {}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket,
		Exec: &spec.Exec{Command: "/usr/local/bin/other-csi"}}); err != nil {
		t.Fatalf("register mem again with an exec block, not started yet: %v", err)
	}
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
