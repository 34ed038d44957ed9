package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath"
)

// `plugin register` during a plugin's restart, its socket missing for a moment or left by the
// process that died (connections refused), failed at once, while commands on volumes retry a
// plugin that is unavailable. It waits for the plugin (--wait, 5 s by default) and registers
// one that starts listening 1 s later; one that never does fails after the wait, the error
// naming the socket and the wait.
func TestPluginRegisterWaitsForAPluginRestarting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stale bool // the socket file is there, nothing listening on it
	}{
		{"socket missing", false},
		{"connections refused", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := os.MkdirTemp("", "regwait")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			socket := filepath.Join(dir, "hp.sock")
			if tc.stale {
				l, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
				if err != nil {
					t.Fatal(err)
				}
				l.SetUnlinkOnClose(false)
				l.Close()
			}
			register := func(args ...string) (string, error) {
				cmd := exec.Command(shortVolctl(t), append([]string{"plugin", "register", "--id", "hp", "--socket", socket}, args...)...)
				cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+filepath.Join(dir, "state"), "NO_COLOR=1")
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				return out.String(), err
			}

			out, err := register("--wait", "500ms")
			if err == nil {
				t.Fatalf("register of a plugin that never answers succeeded:\n%s", out)
			}
			for _, want := range []string{socket, "waited 500ms for it to answer (--wait)"} {
				if !strings.Contains(out, want) {
					t.Errorf("register of a plugin that never answers says no %q:\n%s", want, out)
				}
			}

			type result struct {
				out string
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := register()
				done <- result{out, err}
			}()
			time.Sleep(time.Second)
			p, err := hostpath.New(hostpath.Config{Root: filepath.Join(dir, "root"), NodeID: "n1"})
			if err != nil {
				t.Fatal(err)
			}
			lis, err := hostpath.Listen(socket)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- p.Serve(ctx, lis) }()
			t.Cleanup(func() { cancel(); <-served })
			r := <-done
			if r.err != nil || !strings.Contains(r.out, `Plugin "hp" registered`) {
				t.Errorf("register of a plugin that starts listening 1 s later: %v\n%s", r.err, r.out)
			}
		})
	}
}

// A socket path that holds a directory, a regular file or a named pipe is no plugin starting:
// none will listen there while it is. `plugin register` waited its --wait on one all the same
// and then said "is not a socket; waited 5s for it to answer (--wait)"; it now says at once
// what the path is, waiting for nothing (a --wait of an hour would fail the test's deadline).
func TestRegisterOfAPathThatIsNotASocketFailsAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	paths := map[string]string{"a regular file": filepath.Join(dir, "file"), "a directory": filepath.Join(dir, "dir"), "a named pipe (FIFO)": filepath.Join(dir, "fifo")}
	if err := os.WriteFile(paths["a regular file"], nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(paths["a directory"], 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(paths["a named pipe (FIFO)"], 0o600); err != nil {
		t.Fatal(err)
	}
	for kind, path := range paths {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, shortVolctl(t), "plugin", "register", "--id", "hp", "--socket", path, "--wait", "1h")
		cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+filepath.Join(dir, "state"), "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		waited := ctx.Err() != nil
		cancel()
		if waited {
			t.Errorf("register of %s as the socket waited for it to answer:\n%s", kind, out)
			continue
		}
		if err == nil || !strings.Contains(string(out), "socket "+path+" is "+kind+", not a socket") || strings.Contains(string(out), "(--wait)") {
			t.Errorf("register of %s as the socket: %v\n%s\nwant a failure naming the path and what it is, at once", kind, err, out)
		}
	}
}
