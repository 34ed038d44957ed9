package agent

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// An exec plugin registered again on another socket while it holds mounts: the agent keeps its
// process on the old socket until it has none (it never stops a plugin under mounts), while
// every command would go to the new one and find nothing. Before, the registration was taken,
// the release failed ("socket ... does not exist"), the claim stayed unpublishing, and since it
// was never released the plugin never lost its mounts and was never moved: wedged for good.
// The registration is refused with nothing recorded; the release goes through the socket the
// process serves.
func TestExecPluginsSocketIsNotMovedFromUnderItsMounts(t *testing.T) {
	f := newFixture(t)
	sp, stop, pid := f.supervisedUnderAClaim()
	defer stop()
	moved := sp
	moved.Socket = filepath.Join(f.dir, "sockets-moved", "hp.sock")
	_, err := f.e.RegisterPlugin(f.ctx, moved)
	if !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "mount(s)") {
		t.Fatalf("registering the exec plugin on another socket under its mount: %v; want a conflict naming the mount", err)
	}
	infos, err := f.e.PluginStatus(f.ctx, "hp")
	if err != nil {
		t.Fatal(err)
	}
	if infos[0].NodeSocket != sp.Socket {
		t.Errorf("plugin hp's socket after the refused move: %q, want %q as before", infos[0].NodeSocket, sp.Socket)
	}
	if !alive(pid) {
		t.Errorf("the plugin's process (pid %d) under the mount was stopped", pid)
	}
	if _, err := f.openEngine().Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatalf("release through the socket the plugin serves: %v", err)
	}
	if _, err := f.e.RegisterPlugin(f.ctx, moved); err != nil {
		t.Fatalf("registering it on the other socket once it holds no mount: %v", err)
	}
}
