package cli

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// --socket lands where a plugin block's socket would for the declared type.
func TestPluginRegisterFlagPlugin(t *testing.T) {
	tests := []flagCase[spec.Plugin]{
		{name: "monolith", args: []string{"--id", "hp", "--socket", "/run/hp.sock"},
			want: spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/run/hp.sock"}},
		{name: "split monolith", args: []string{"--id", "hp", "--controller-socket", "/run/c.sock", "--node-socket", "/run/n.sock"},
			want: spec.Plugin{ID: "hp", Type: spec.PluginMonolith, ControllerSocket: "/run/c.sock", NodeSocket: "/run/n.sock"}},
		{name: "controller", args: []string{"--id", "c", "--type", "controller", "--socket", "/run/c.sock", "--timeout", "5m"},
			want: spec.Plugin{ID: "c", Type: spec.PluginController, ControllerSocket: "/run/c.sock", Timeout: 5 * time.Minute}},
		{name: "node", args: []string{"--id", "n", "--type", "node", "--socket", "/run/n.sock"},
			want: spec.Plugin{ID: "n", Type: spec.PluginNode, NodeSocket: "/run/n.sock"}},
		{name: "node given both", args: []string{"--id", "n", "--type", "node", "--socket", "/run/a.sock", "--node-socket", "/run/b.sock"},
			wantErr: "socket and node_socket both given"},
		{name: "relative socket", args: []string{"--id", "hp", "--socket", "hp.sock"}, wantErr: `socket "hp.sock" must be an absolute path`},
		{name: "negative timeout", args: []string{"--id", "hp", "--socket", "/run/hp.sock", "--timeout", "-1s"}, wantErr: "--timeout must not be negative"},
		// 1ns failed every long RPC at once, blaming the plugin, and left a created volume
		// "creating" for good (spec.CheckPluginTimeout).
		{name: "a timeout below the least", args: []string{"--id", "hp", "--socket", "/run/hp.sock", "--timeout", "1ns"},
			wantErr: `plugin register: plugin "hp": timeout: 1ns is less than the least it may be, 1s (a long RPC, a create or a publish, needs that long)`},
		{name: "a timeout above the most", args: []string{"--id", "hp", "--socket", "/run/hp.sock", "--timeout", "1000000h"},
			wantErr: `plugin "hp": timeout: 1000000h0m0s is more than the most it may be, 24h0m0s`},
		{name: "the least timeout", args: []string{"--id", "hp", "--socket", "/run/hp.sock", "--timeout", "1s"},
			want: spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/run/hp.sock", Timeout: time.Second}},
		{name: "the most timeout", args: []string{"--id", "hp", "--socket", "/run/hp.sock", "--timeout", "24h"},
			want: spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/run/hp.sock", Timeout: 24 * time.Hour}},
		{name: "no id", args: []string{"--socket", "/run/hp.sock"}, wantErr: "plugin ID must not be empty"},
		{name: "nothing", args: nil, wantErr: "give spec files"},
		{name: "files and flags", args: []string{"p.hcl", "--id", "x"}, wantErr: "not both"},
		{name: "stdin twice", args: []string{"-", "-"}, wantErr: "standard input (-) can be given only once"},
	}
	checkFlagCases(t, newCmdPluginRegister, tests, func(t *testing.T, o PluginRegisterOptions) (spec.Plugin, error) {
		got, err := o.plugins(context.Background())
		if err == nil && len(got) != 1 {
			t.Fatalf("plugins = %+v, want one", got)
		}
		if err != nil {
			return spec.Plugin{}, err
		}
		return got[0], nil
	})
}

// Every file is parsed before any plugin is registered: one invalid file means no plugins at
// all, every problem rendered on stderr, exit 2.
func TestPluginRegisterFilesAllOrNothing(t *testing.T) {
	files := map[string]string{
		"good.hcl": `plugin "a" {
  type   = "monolith"
  socket = "/run/a.sock"
}
plugin "b" {
  type   = "node"
  socket = "/run/b.sock"
}`,
		"bad.hcl": `plugin "c" {
  type = "monolithic"
  socket = "/run/c.sock"
}`,
	}
	read := func(name string) ([]byte, error) { return []byte(files[name]), nil }

	ios, _, _, errOut := iostreams.Test()
	o := &PluginRegisterOptions{IO: ios, ReadFile: read, Files: []string{"good.hcl"}}
	got, err := o.plugins(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []spec.Plugin{{ID: "a", Type: spec.PluginMonolith, Socket: "/run/a.sock"}, {ID: "b", Type: spec.PluginNode, NodeSocket: "/run/b.sock"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("plugins = %+v, want %+v", got, want)
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr = %q, want nothing for valid files", errOut)
	}

	o.Files = []string{"good.hcl", "bad.hcl"}
	got, err = o.plugins(context.Background())
	if got != nil || ExitCode(err) != ExitUsage {
		t.Fatalf("plugins, err = %v, %v (exit %d); want none, exit 2", got, err, ExitCode(err))
	}
	checkHolds(t, "stderr", errOut.String(), []string{"bad.hcl:2:", "Invalid plugin type", `Did you mean "monolith"?`}, nil)
	if !strings.Contains(err.Error(), "1 of 2 spec files are invalid; nothing was registered") {
		t.Errorf("err = %v", err)
	}

	// One ID in two files: which declaration would be kept depends on the order of the
	// arguments, so neither is registered.
	files["b-again.hcl"] = "plugin \"b\" {\n  type   = \"node\"\n  socket = \"/run/b2.sock\"\n}\n"
	o.Files = []string{"good.hcl", "b-again.hcl"}
	got, err = o.plugins(context.Background())
	if got != nil || ExitCode(err) != ExitUsage || err == nil ||
		!strings.Contains(err.Error(), `plugin "b" is declared in both good.hcl and b-again.hcl; nothing was registered`) {
		t.Fatalf("plugins, err = %v, %v (exit %d); want none, exit 2, naming both files", got, err, ExitCode(err))
	}
}

// TestSocketExposure: a plugin socket another user could stand in for is named with why: its
// directory other users may write, sticky (/tmp) or not, by its mode or its ACL, or own, or the
// socket file theirs; so
// is one every user may connect to, in a directory they may enter. A socket in a directory of
// root's (or this user's) that no one else may write is not, nor one that no one else can reach.
func TestSocketExposure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	root := t.TempDir()
	for _, d := range []struct {
		name  string
		mode  os.FileMode
		owner int
	}{{"tmp", os.ModeSticky | 0o777, 0}, {"open", 0o777, 0}, {"users", 0o755, 4242}, {"private", 0o755, 0}} {
		p := filepath.Join(root, d.name)
		err := errors.Join(os.Mkdir(p, 0o700), os.Chmod(p, d.mode), os.Chown(p, d.owner, d.owner))
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := func(name string) string { return filepath.Join(root, name) }
	// Root's, mode 0755, but uid 4242 may write it through an ACL (setfacl -m u:4242:rwx).
	if err := os.Mkdir(dir("acl"), 0o755); err != nil {
		t.Fatal(err)
	}
	hostpathtest.GrantWrite(t, dir("acl"), 4242)
	theirs := filepath.Join(root, "private", "theirs.sock")
	if err := os.WriteFile(theirs, nil, 0o600); err != nil { // standing in for a socket file
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	// A socket every user may connect to, in a directory every user may enter, and in one only
	// root may enter (mode 0700: unreachable to others).
	open, hidden := filepath.Join(dir("private"), "open.sock"), filepath.Join(dir("shut"), "open.sock")
	if err := os.Mkdir(dir("shut"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{open, hidden} {
		l, err := net.Listen("unix", s)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := os.Chmod(s, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ socket, want string }{
		{open, "may be connected to by every user (mode 0777)"},
		{hidden, ""},
		{filepath.Join(dir("tmp"), "p.sock"), "which other users may write (mode 01777)"},
		{filepath.Join(dir("open"), "p.sock"), "which other users may write (mode 0777)"},
		{filepath.Join(dir("users"), "p.sock"), "which uid 4242 owns"},
		{filepath.Join(dir("acl"), "p.sock"), "which uid 4242 may write through its ACL"},
		{theirs, "is owned by uid 4242, another user"},
		{filepath.Join(dir("private"), "p.sock"), ""},
		{"", ""},
	} {
		got := engine.SocketExposure(c.socket)
		if c.want == "" && got != "" || c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, "/run/csi") && !strings.Contains(got, "mode 0660 or 0600")) {
			t.Errorf("SocketExposure(%s) = %q, want it to say %q", c.socket, got, c.want)
		}
	}
}

// A plugin registered with an exec block whose command another user may change is one the
// agent will not start (agent.UntrustedCommand): register says so at once, naming the path and
// why, rather than leave it to be found in the agent's log. Before, it said nothing.
func TestPluginRegisterWarnsOfACommandTheAgentWillNotRun(t *testing.T) {
	dir := t.TempDir()
	command := filepath.Join(dir, "plugin")
	if err := os.WriteFile(command, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(command, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	src := "plugin \"p\" {\n  type   = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"" + command + "\"\n  }\n}\n"
	ios, _, _, errOut := iostreams.Test()
	o := &PluginRegisterOptions{IO: ios, Files: []string{"p.hcl"},
		ReadFile: func(string) ([]byte, error) { return []byte(src), nil },
		Engine:   func(context.Context) (*engine.Engine, error) { return nil, errors.New("no engine in this test") }}
	_ = pluginRegisterRun(context.Background(), o) // the warning comes before the engine opens
	checkHolds(t, "stderr", errOut.String(), []string{`Warning: plugin "p": the agent will not start it: command ` + command,
		command + " is writable by other users (mode 0777)", "chmod go-w"}, nil)
}
