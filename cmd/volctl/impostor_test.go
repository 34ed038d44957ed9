package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A plugin's socket in a directory every user may write (/tmp, sticky): while the plugin is
// down, another user binds its name with a plugin of their own that answers as the same
// driver. volctl, root, must send it nothing: not the create of a volume, whose secrets the
// request carries, nor anything else. It is refused, naming the socket, the process and its
// user, and what to do.
func TestPluginSocketServedByAnotherUserIsRefused(t *testing.T) {
	t.Parallel()
	bin, home := nobodysVolctl(t)
	shared := filepath.Join(filepath.Dir(home), "shared") // as /tmp: every user may write it
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(shared, "hp.sock")
	state := t.TempDir()

	// serve runs volctl's own plugin on the socket, as root or as nobody, until the test ends
	// or the returned stop is called.
	serve := func(root string, asOther bool) (stop func()) {
		cmd := exec.Command(bin, "plugin", "serve", "hostpath", "--socket", socket, "--root", root, "--node-id", "n1")
		if asOther {
			cmd.SysProcAttr = asNobody()
		}
		var said strings.Builder
		cmd.Stdout, cmd.Stderr = &said, &said
		stop, done := startUntilStopped(t, cmd, 30*time.Second)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Lstat(socket); err == nil {
				return stop
			}
			select {
			case <-done:
				t.Fatalf("plugin serve exited before it listened:\n%s", said.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("plugin serve did not listen on %s within 30s:\n%s", socket, said.String())
			}
		}
	}
	volctl := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}

	stopRoots := serve(filepath.Join(t.TempDir(), "root"), false)
	if code, out := volctl("plugin", "register", "--id", "hp", "--socket", socket); code != 0 {
		t.Fatalf("plugin register of root's plugin exited %d:\n%s", code, out)
	}
	stopRoots()

	theirRoot := filepath.Join(home, "hp")
	serve(theirRoot, true)
	const secret = "AQDsIoxgHqpeBBAAtmd9Ndu4m1xspTbvwZdIzA=="
	spec := filepath.Join(t.TempDir(), "data.hcl")
	if err := os.WriteFile(spec, []byte(`id = "data"
name = "data"
type = "csi"
plugin_id = "hp"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
secrets = { key = "`+secret+`" }
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := volctl("volume", "create", spec)
	made, _ := filepath.Glob(filepath.Join(theirRoot, "meta", "volumes", "*.json"))
	if len(made) > 0 {
		t.Errorf("volume create sent CreateVolume, with the volume's secrets, to uid %d's plugin on %s, which made %s (exit %d)\n%s", nobody, socket, made, code, out)
	}
	if code == 0 {
		t.Fatalf("volume create through a socket another user serves succeeded:\n%s", out)
	}
	t.Logf("volume create exited %d:\n%s", code, out)
	for _, want := range []string{"socket " + socket, "uid 65534", "stop that process", "/run/csi"} {
		if !strings.Contains(out, want) {
			t.Errorf("volume create's refusal lacks %q:\n%s", want, out)
		}
	}

	// Registered afresh, the plugin is refused alike.
	if code, out := volctl("plugin", "register", "--id", "hp2", "--socket", socket); code == 0 || !strings.Contains(out, "uid 65534") {
		t.Errorf("plugin register of a socket another user serves exited %d:\n%s", code, out)
	}
}
