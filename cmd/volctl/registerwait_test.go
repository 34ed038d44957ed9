package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
