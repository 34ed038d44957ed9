package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// The agent runs a plugin's command as its own user, root most often, at every start and
// restart. A program another user may change (theirs, writable by them, in a directory they
// own or may write, or shadowed by a directory of PATH they may write, searched before the
// program's own) would run their code as root from its next start on: the agent refuses to
// run it, naming the path and what to change, and runs nothing. Before, it ran it.
func TestAgentRunsNoPluginProgramAnotherUserMayChange(t *testing.T) {
	const name = "volctl-test-plugin"
	// program writes a script that leaves name.ran beside itself when run.
	program := func(t *testing.T, dir string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\ntouch \"$0.ran\"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	mkdir := func(t *testing.T, dir string, mode os.FileMode) string {
		t.Helper()
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil { // past the umask, sticky included
			t.Fatal(err)
		}
		return dir
	}
	// start starts command as plugin p's exec block; err is startProcess's.
	start := func(t *testing.T, command string) error {
		t.Helper()
		run := t.TempDir()
		p, err := startProcess(spec.Plugin{ID: "p", Socket: filepath.Join(run, "p.sock"), Exec: &spec.Exec{Command: command}}, run, run)
		if err == nil && !p.wait(30*time.Second) {
			t.Fatal("the plugin did not exit")
		}
		return err
	}
	ran := func(path string) bool {
		_, err := os.Stat(path + ".ran")
		return err == nil
	}

	tests := []struct {
		name string
		// setup makes the program in base and returns the command, and the path and the words
		// the refusal must name.
		setup func(t *testing.T, base string) (command, path, why string)
	}{
		{"writable by other users", func(t *testing.T, base string) (string, string, string) {
			p := program(t, mkdir(t, filepath.Join(base, "bin"), 0o755), 0o777)
			return p, p, "is writable by other users (mode 0777)"
		}},
		{"group-writable for another group", func(t *testing.T, base string) (string, string, string) {
			p := program(t, mkdir(t, filepath.Join(base, "bin"), 0o755), 0o775)
			if err := os.Chown(p, -1, 4242); err != nil {
				t.Skipf("giving the program another group needs root: %v", err)
			}
			return p, p, "is writable by other users (mode 0775)"
		}},
		{"another user's", func(t *testing.T, base string) (string, string, string) {
			p := program(t, mkdir(t, filepath.Join(base, "bin"), 0o755), 0o755)
			if err := os.Chown(p, 4242, -1); err != nil {
				t.Skipf("giving the program another owner needs root: %v", err)
			}
			return p, p, "is owned by uid 4242"
		}},
		{"in a directory other users may write", func(t *testing.T, base string) (string, string, string) {
			dir := mkdir(t, filepath.Join(base, "bin"), 0o777)
			return program(t, dir, 0o755), dir, "is writable by other users (mode 0777)"
		}},
		{"through a symlink to one writable by other users", func(t *testing.T, base string) (string, string, string) {
			p := program(t, mkdir(t, filepath.Join(base, "real"), 0o755), 0o777)
			link := filepath.Join(mkdir(t, filepath.Join(base, "bin"), 0o755), "plugin")
			if err := os.Symlink(p, link); err != nil {
				t.Fatal(err)
			}
			return link, p, "is writable by other users (mode 0777)"
		}},
		{"a relative path, from a working directory other users may write", func(t *testing.T, base string) (string, string, string) {
			open := mkdir(t, filepath.Join(base, "open"), 0o777)
			program(t, mkdir(t, filepath.Join(open, "bin"), 0o755), 0o755)
			t.Chdir(open)
			return filepath.Join("bin", name), open, "is writable by other users (mode 0777)"
		}},
		{"a name whose PATH searches a directory other users may write first", func(t *testing.T, base string) (string, string, string) {
			open := mkdir(t, filepath.Join(base, "open"), 0o777)
			bin := mkdir(t, filepath.Join(base, "bin"), 0o755)
			program(t, bin, 0o755)
			t.Setenv("PATH", open+":"+bin+":/usr/bin:/bin")
			return name, open, "is writable by other users (mode 0777)"
		}},
		{"a name whose PATH searches a sticky directory first", func(t *testing.T, base string) (string, string, string) {
			open := mkdir(t, filepath.Join(base, "tmp"), 0o777|os.ModeSticky)
			bin := mkdir(t, filepath.Join(base, "bin"), 0o755)
			program(t, bin, 0o755)
			t.Setenv("PATH", open+":"+bin+":/usr/bin:/bin")
			return name, open, "is writable by other users (mode 01777)"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			command, path, why := tt.setup(t, base)
			err := start(t, command)
			if err == nil {
				t.Fatalf("the agent ran %s, which another user may change (%s %s), as uid %d; want it refused", command, path, why, os.Geteuid())
			}
			fix := "chmod go-w"
			if !strings.Contains(command, "/") {
				fix = "take that directory out of the agent's PATH"
			}
			for _, want := range []string{"command " + command, path + " " + why, "not run", fix} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to say %q", err, want)
				}
			}
			if ran(filepath.Join(base, "bin", name)) || ran(filepath.Join(base, "real", name)) || ran(filepath.Join(base, "open", "bin", name)) {
				t.Error("the program ran")
			}
		})
	}

	// Nothing else is refused: a program of root's (or this user's) in directories only they
	// may write, found by its path or in a PATH of such directories only, runs.
	t.Run("a program only this user may change", func(t *testing.T) {
		base := t.TempDir()
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		bin := mkdir(t, filepath.Join(base, "bin"), 0o755)
		p := program(t, bin, 0o755)
		if err := start(t, p); err != nil {
			t.Fatal(err)
		}
		if !ran(p) {
			t.Error("the program did not run")
		}
		if err := os.Remove(p + ".ran"); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", mkdir(t, filepath.Join(base, "empty"), 0o755)+":"+bin+":"+filepath.Join(base, "missing")+":/usr/bin:/bin")
		if err := start(t, name); err != nil {
			t.Fatal(err)
		}
		if !ran(p) {
			t.Error("the program found in PATH did not run")
		}
	})
}
