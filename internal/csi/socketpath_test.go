package csi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestSocketPathIsTakenAsWritten: a socket path is a file name, not a URL. gRPC reads its
// target as one, so a socket named with "#" or "?" was dialled at the path before it ("/x/a"),
// "%41" as "A" — another plugin's socket when one is there — and "%zz", or a control character
// a directory name may hold, was refused as a bad URL. Each reaches the plugin listening on
// exactly that path, in whichever form (path or unix://PATH) it is given.
func TestSocketPathIsTakenAsWritten(t *testing.T) {
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	serve := func(path, name string) {
		cfg := csitest.DefaultMemConfig()
		cfg.Name = name
		csitest.ServeAt(t, path, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	}
	// The sockets a misread name would reach instead: "a" for "a#b" and "a?b", "aAb" for "a%41b".
	serve(filepath.Join(dir, "a"), "wrong.example.com")
	serve(filepath.Join(dir, "aAb"), "wrong.example.com")
	for _, name := range []string{"a#b", "a?b", "a%41b", "a%zzb", "a b", "a\nb", "a\tb", "é%2Fb"} {
		path := filepath.Join(dir, name)
		serve(path, "right.example.com")
		for _, socket := range []string{path, "unix://" + path} {
			c, err := csi.New(csi.Config{ControllerSocket: socket, NodeSocket: socket})
			if err != nil {
				t.Errorf("socket %+q: %v", socket, err)
				continue
			}
			info, err := c.GetPluginInfo(context.Background())
			c.Close()
			if err != nil || info.Name != "right.example.com" {
				t.Errorf("socket %+q: GetPluginInfo gave %q, %v; want right.example.com, the plugin on that path", socket, info.Name, err)
			}
		}
	}
}
