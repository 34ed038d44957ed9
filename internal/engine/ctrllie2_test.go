package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// The same storage reached through two plugin IDs whose sockets are spelled differently (a
// symlinked directory, /var/run and /run, or a path not in its clean form): a register of one
// ID's volume under the other is refused as on one spelling, since deleting either volctl
// volume would delete the other's data.
func TestOneStorageVolumeThroughTwoSpellingsOfOneSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	spellings := otherSpellings(t, h.socket)
	a := h.create(volume("a"))
	for i, sock := range spellings {
		id := []string{"mem2", "mem3"}[i]
		h.registerPlugin(id, sock)
		reg := volume("c-" + id)
		reg.PluginID, reg.ExternalID = id, a.ExternalID
		if _, err := h.e.RegisterVolume(h.ctx, reg); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"a"`) {
			t.Errorf("register a's storage again through %s at %s: %v", id, sock, err)
		}
	}
}

// otherSpellings are two other paths of socket: through a symlink to its directory, and with a
// "/./" in it.
func otherSpellings(t *testing.T, socket string) []string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "run")
	if err := os.Symlink(filepath.Dir(socket), link); err != nil {
		t.Fatal(err)
	}
	return []string{filepath.Join(link, filepath.Base(socket)), filepath.Dir(socket) + "/./" + filepath.Base(socket)}
}

// Two volctl volumes recorded on one storage volume (state from a volctl that did not see
// through a socket's other spelling): deleting one is refused, by a delete or by reconcile
// finishing one, since DeleteVolume would delete the other's data, and says how to forget it
// instead.
func TestDeleteRefusedWhileAnotherVolumeRecordsTheStorage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	a := h.create(volume("a"))
	h.update(func(tx *store.Tx) error {
		dup := store.VolumeFromSpec(volume("b"))
		dup.ExternalID, dup.State = a.ExternalID, store.VolumeReady
		return tx.Volumes().Insert(&dup)
	})
	err := h.e.DeleteVolume(h.ctx, "b")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "deregister") {
		t.Errorf("delete of b, on a's storage: %v; want a conflict naming a and deregister", err)
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d time(s)", n)
	}
	if _, ok := h.mem.Volume(a.ExternalID); !ok {
		t.Fatalf("a's storage %q was deleted through b", a.ExternalID)
	}
	if v := h.volumeInfo("b"); v.State != "ready" {
		t.Errorf("b is %s after the refused delete, want ready", v.State)
	}

	// A delete of b begun before (marked deleting) is not finished by reconcile either.
	h.reconcileAsDeleting("b")
	if _, ok := h.mem.Volume(a.ExternalID); !ok {
		t.Fatalf("a's storage %q was deleted by reconcile finishing b's delete", a.ExternalID)
	}
	if v := h.volumeInfo("b"); v.State != "ready" {
		t.Errorf("b is %s after reconcile, want ready", v.State)
	}
}

// markDeleting records volume id as an interrupted delete (state deleting, DeleteVolume's
// answer never recorded), as a kill mid-delete leaves it for reconcile.
func (h *harness) markDeleting(id string) {
	h.t.Helper()
	h.update(func(tx *store.Tx) error {
		v, err := tx.Volumes().Get(id)
		if err != nil {
			return err
		}
		v.State = store.VolumeDeleting
		return tx.Volumes().Update(&v)
	})
}

// reconcileAsDeleting marks volume id deleting, as a delete begun before leaves it, and runs a
// reconcile pass, which finishes such a delete unless something refuses it.
func (h *harness) reconcileAsDeleting(id string) {
	h.t.Helper()
	h.markDeleting(id)
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		h.t.Logf("reconcile: %v", err)
	}
}
