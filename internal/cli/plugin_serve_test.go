package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath"
)

func TestPluginServeHostpathFlags(t *testing.T) {
	tests := []flagCase[PluginServeHostpathOptions]{
		{name: "all flags", args: []string{"--socket", "unix:///run/hp.sock", "--root", "/srv/hp", "--node-id", "n1", "--enable-attach", "--max-volumes", "7"},
			want: PluginServeHostpathOptions{Socket: "unix:///run/hp.sock", Root: "/srv/hp", NodeID: "n1", EnableAttach: true, MaxVolumes: 7}},
		{name: "defaults", args: []string{"--root", "r", "--node-id", "n"},
			want: PluginServeHostpathOptions{Root: "r", NodeID: "n"}},
		{name: "extra argument", args: []string{"x"}, wantErr: "accepts 0 arg"},
		{name: "bad number", args: []string{"--max-volumes", "many"}, wantErr: "invalid argument"},
	}
	checkFlagCases(t, newCmdPluginServeHostpath, tests, func(_ *testing.T, got PluginServeHostpathOptions) (PluginServeHostpathOptions, error) {
		got.IO, got.Logger, got.Getenv = nil, nil, nil
		return got, nil
	})
}

func TestPluginServeHostpathRunUsage(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "CSI_ENDPOINT" {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name    string
		opts    PluginServeHostpathOptions
		wantErr string
	}{
		{"no socket", PluginServeHostpathOptions{Root: "r", NodeID: "n", Getenv: env("")}, "--socket is required"},
		{"no root", PluginServeHostpathOptions{Socket: "/s", NodeID: "n"}, "--root is required"},
		{"no node ID", PluginServeHostpathOptions{Socket: "/s", Root: "r"}, "--node-id is required"},
		{"negative max", PluginServeHostpathOptions{Socket: "/s", Root: "r", NodeID: "n", MaxVolumes: -1}, "must not be negative"},
		{"tcp endpoint from the environment", PluginServeHostpathOptions{Root: "r", NodeID: "n", Getenv: env("tcp://h:1")}, "only unix sockets"},
		{"socket path over sun_path", PluginServeHostpathOptions{Socket: "unix:///run/" + strings.Repeat("x", 100) + ".sock", Root: "r", NodeID: "n"},
			"socket /run/" + strings.Repeat("x", 100) + ".sock is 110 bytes long; a unix socket path must fit in sun_path, at most 107 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErr(t, pluginServeHostpathRun(context.Background(), &tt.opts), tt.wantErr, ExitUsage)
		})
	}
}

// TestPluginServeHostpathRun serves on the socket CSI_ENDPOINT names until the context ends,
// and leaves no socket behind.
func TestPluginServeHostpathRun(t *testing.T) {
	dir, err := os.MkdirTemp("", "hp-cli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "hp.sock")
	opts := &PluginServeHostpathOptions{
		Root: filepath.Join(dir, "root"), NodeID: "n1",
		Getenv: func(k string) string {
			if k == "CSI_ENDPOINT" {
				return "unix://" + socket
			}
			return ""
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pluginServeHostpathRun(ctx, opts) }()

	// Once the socket exists, a second instance on it is refused: Listen's directory lock means
	// the first one is listening by the time the second can look.
	for {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := hostpath.Listen(socket); !errors.Is(err, hostpath.ErrSocketInUse) {
		t.Fatalf("second Listen: %v, want ErrSocketInUse", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v after cancel, want nil", err)
	}
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}
