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
	"github.com/volctl/volctl/internal/iostreams"
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
	// Once the socket exists, a second instance on it is refused: Listen's directory lock means
	// the first one is listening by the time the second can look.
	done := serving(ctx, t, opts, socket)
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

// TestPluginServeHostpathRefusesANodeIDThatShowsAsAnother: the node ID goes to every CO as
// NodeGetInfo's node_id and into each volume's topology, and is printed on start. One holding an
// escape sequence, a carriage return or a bidi override (`--node-id "$(hostname)"` of a host
// someone named so) was served: the start line wrote it raw to the terminal (retitling it,
// clearing the screen), and `volctl plugin status` showed a node no one could type in a
// topology_request. It is refused as a usage error, quoted, before anything is served; so is one
// past the CSI spec's 256 bytes for NodeGetInfo's node_id.
func TestPluginServeHostpathRefusesANodeIDThatShowsAsAnother(t *testing.T) {
	for _, tt := range []struct {
		name, nodeID, want string
	}{
		{"escape sequence", "n1\x1b]0;pwned\a", `--node-id "n1\x1b]0;pwned\a" must not contain the control character U+001B (its character 3)`},
		{"carriage return", "n1\rn2", `--node-id "n1\rn2" must not contain the control character U+000D`},
		{"bidi override", "n1\u202e2n", `--node-id "n1\u202e2n" must not contain U+202E (its character 3)`},
		{"zero width space", "n1\u200b", `--node-id "n1\u200b" must not contain U+200B (its character 3)`},
		{"not UTF-8", "n1\xff", `--node-id "n1\xff" is not valid UTF-8`},
		{"no-break space", "n1\u00a0n2", `--node-id "n1\u00a0n2" must not contain U+00A0 (its character 3): a space other than U+0020`},
		{"past 256 bytes", strings.Repeat("n", 257), "--node-id is 257 bytes long; the CSI spec limits a node ID to 256"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // the old code served until it ran out
			defer cancel()
			err := pluginServeHostpathRun(ctx, &PluginServeHostpathOptions{
				Socket: filepath.Join(dir, "hp.sock"), Root: filepath.Join(dir, "root"), NodeID: tt.nodeID,
			})
			expectErr(t, err, "plugin serve hostpath: "+tt.want, ExitUsage)
			if _, err := os.Stat(filepath.Join(dir, "hp.sock")); !os.IsNotExist(err) {
				t.Errorf("refused, yet the socket was made: %v", err)
			}
		})
	}
	// A host name as `hostname` prints one is served.
	for _, ok := range []string{"n1", "web-01.example.com", "数据库"} {
		if err := nodeIDProblem(ok); err != nil {
			t.Errorf("node ID %q refused: %v", ok, err)
		}
	}
}

// TestPluginServeHostpathServesTheNodeIDsCSITakes: NodeGetInfo's node_id may be 256 bytes (the
// CSI spec's bound for it, not a string field's 128), and `--node-id $(hostname -f)` of a host
// with a long DNS name (up to 253 bytes), or one named in two scripts, was refused: a host whose
// plugin ran with such an ID (it keys its attachments and topology by it) could not start it
// again after an upgrade. They are served.
func TestPluginServeHostpathServesTheNodeIDsCSITakes(t *testing.T) {
	label := strings.Repeat("a", 63)
	fqdn := label + "." + label + "." + label + ".example.com" // 203 bytes
	for _, tt := range []struct{ name, id string }{
		{"203-byte DNS name", fqdn}, {"256 bytes", strings.Repeat("n", 256)},
		{"Cyrillic and Latin", "узел-node1"}, {"Latin and Cyrillic", "db-\u0441\u0441"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			socket := filepath.Join(dir, "hp.sock")
			ios, _, _, stderr := iostreams.Test()
			ctx, cancel := context.WithCancel(context.Background())
			done := serving(ctx, t, &PluginServeHostpathOptions{IO: ios, Socket: socket, Root: filepath.Join(dir, "root"), NodeID: tt.id}, socket)
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("node ID %q (%d bytes): %v", tt.id, len(tt.id), err)
			}
			if !strings.Contains(stderr.String(), ", node "+tt.id+")") {
				t.Errorf("node ID %q: the start line does not name it: %q", tt.id, stderr.String())
			}
		})
	}
}

// TestPluginServeHostpathStartLineEscapesItsSocket: the start line names the socket, a path that
// may hold any byte but NUL: a bidi override in it laid the rest of the line out backwards and a
// C1 CSI byte (0x9b) began an escape sequence on a terminal that reads C1, as the root's did. It
// is written escaped.
func TestPluginServeHostpathStartLineEscapesItsSocket(t *testing.T) {
	dir := t.TempDir()
	ios, _, _, stderr := iostreams.Test()
	socket := filepath.Join(dir, "hp\u202e\x9b2J.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := serving(ctx, t, &PluginServeHostpathOptions{IO: ios, Socket: socket, Root: filepath.Join(dir, "root"), NodeID: "n1"}, socket)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := stderr.String()
	if strings.Contains(out, "\u202e") || strings.Contains(out, "\x9b") || !strings.Contains(out, " on "+filepath.Join(dir, `hp\u202e\x9b2J.sock`)+" (root ") {
		t.Errorf("the start line does not write the socket escaped: %q", out)
	}
}

// TestPluginServeHostpathStartLineEscapesItsRoot: the start line names --root, a path, which
// Linux lets hold any byte but "/" and NUL: one holding an escape sequence was written raw to
// the terminal (or the supervisor's log) that started the plugin. It is written escaped, as
// every path volctl prints.
func TestPluginServeHostpathStartLineEscapesItsRoot(t *testing.T) {
	dir := t.TempDir()
	ios, _, _, stderr := iostreams.Test()
	socket := filepath.Join(dir, "hp.sock")
	root := filepath.Join(dir, "r\x1b]0;pwned\a")
	ctx, cancel := context.WithCancel(context.Background())
	done := serving(ctx, t, &PluginServeHostpathOptions{IO: ios, Socket: socket, Root: root, NodeID: "n1"}, socket)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out := stderr.String(); strings.ContainsRune(out, '\x1b') || !strings.Contains(out, `(root `+filepath.Join(dir, `r\x1b]0;pwned\a`)+`, node n1)`) {
		t.Errorf("the start line does not write the root escaped: %q", out)
	}
}

// serving runs pluginServeHostpathRun until ctx ends, once its socket exists; the channel gets
// what it returned.
func serving(ctx context.Context, t *testing.T, opts *PluginServeHostpathOptions, socket string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- pluginServeHostpathRun(ctx, opts) }()
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
	return done
}
