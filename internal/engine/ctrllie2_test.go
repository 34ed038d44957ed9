package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The same storage reached through two plugin IDs whose sockets are spelled differently (a
// symlinked directory, /var/run and /run, or a path not in its clean form): a register of one
// ID's volume under the other is refused as on one spelling, since deleting either volctl
// volume would delete the other's data.
func TestOneStorageVolumeThroughTwoSpellingsOfOneSocket(t *testing.T) {
	h := newHarness(t, nil)
	link := filepath.Join(t.TempDir(), "run")
	if err := os.Symlink(filepath.Dir(h.socket), link); err != nil {
		t.Fatal(err)
	}
	spellings := []string{
		filepath.Join(link, filepath.Base(h.socket)),
		filepath.Dir(h.socket) + "/./" + filepath.Base(h.socket),
	}
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
