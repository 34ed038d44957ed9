package engine

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// A plugin that answers CreateVolume with a storage volume another volctl volume already
// records: the create is refused as a conflict naming that volume, its intent is forgotten, and
// the storage (the other volume's) is not deleted.
func TestCreateRefusesAnExternalIDAnotherVolumeRecords(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	a := h.create(volume("a"))
	h.mem.AnswerCreateWith(a.ExternalID)

	_, err := h.e.CreateVolume(h.ctx, volume("b"))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `already volume "a"`) {
		t.Fatalf("create of b answered with a's external ID: %v", err)
	}
	if _, err := h.e.Volume(h.ctx, "b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("b's create intent is still recorded: %v", err)
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d times: the storage is a's", n)
	}
	if _, ok := h.mem.Volume(a.ExternalID); !ok {
		t.Errorf("a's storage %q is gone", a.ExternalID)
	}
	if v, err := h.e.Volume(h.ctx, "a"); err != nil || v.State != "ready" || v.ExternalID != a.ExternalID {
		t.Errorf("a after the refused create: %+v, %v", v, err)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "volume-create"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		found = found || (ev.VolumeID == "b" && strings.Contains(ev.Message, "create refused"))
	}
	if !found {
		t.Errorf("no event tells of b's refused create: %+v", evs)
	}
}

// Two creates at once that the plugin answers with one storage volume: exactly one records it.
func TestConcurrentCreatesCannotBothRecordOneExternalID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "shared", CapacityBytes: 1 << 30})
	h.mem.AnswerCreateWith("shared")

	ids := []string{"c1", "c2", "c3", "c4"}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.e.CreateVolume(h.ctx, volume(id))
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrConflict):
			t.Errorf("create %s: %v", ids[i], err)
		}
	}
	var recorded []store.Volume
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		var err error
		recorded, err = tx.Volumes().List(store.VolumeFilter{PluginID: "mem", ExternalID: "shared"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if ok != 1 || len(recorded) != 1 {
		t.Fatalf("%d creates succeeded and %d volumes record external ID \"shared\"; want 1 and 1 (errors: %v)", ok, len(recorded), errs)
	}
}

// The same storage reached through two plugin IDs registered on one socket (one process, one
// storage): a create under the second ID answered with the first's volume, and a register of
// that volume under the second ID, are refused like those under one ID. Else each volctl volume's
// claims would ignore the other's access mode, on one disk.
func TestOneStorageVolumeThroughTwoPluginIDsOnOneSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.registerPlugin("mem2", h.socket)
	a := h.create(volume("a"))

	sv := volume("b")
	sv.PluginID = "mem2"
	h.mem.AnswerCreateWith(a.ExternalID)
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `already volume "a"`) {
		t.Fatalf("create through mem2 answered with a's external ID: %v", err)
	}
	h.mem.AnswerCreateWith("")

	reg := volume("c")
	reg.PluginID, reg.ExternalID = "mem2", a.ExternalID
	if _, err := h.e.RegisterVolume(h.ctx, reg); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("register a's storage again through mem2: %v", err)
	}
	if _, err := h.e.Volume(h.ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("c is recorded: %v", err)
	}
}
