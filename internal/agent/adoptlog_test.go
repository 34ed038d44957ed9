package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leftPlugin starts a process standing for a plugin an earlier agent started and left running
// (killed with SIGKILL, say): recorded in its pid file, its output appended to its log. It
// returns the process's pid.
func (f *fixture) leftPlugin(id string) int {
	f.t.Helper()
	for _, d := range []string{"run", "logs"} {
		if err := os.MkdirAll(filepath.Join(f.dir, d), 0o700); err != nil {
			f.t.Fatal(err)
		}
	}
	log, err := os.OpenFile(filepath.Join(f.dir, "logs", id+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("sleep", "600")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	tick, err := procStartTick(cmd.Process.Pid)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := writePidFile(filepath.Join(f.dir, "run"), id, &process{pid: cmd.Process.Pid, startTick: tick}); err != nil {
		f.t.Fatal(err)
	}
	return cmd.Process.Pid
}

// flood writes n bytes to what the process's stdout is: the plugin's output while no agent ran.
func flood(t *testing.T, pid int, n int) {
	t.Helper()
	out, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/1", pid), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	line := strings.Repeat("y", 1023) + "\n"
	for range n / len(line) {
		if _, err := out.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
}

// outputBounded reports whether the file the process writes its output to, whatever its name
// now, is within maxLogSize.
func outputBounded(t *testing.T, pid int) bool {
	st, err := os.Stat(fmt.Sprintf("/proc/%d/fd/1", pid))
	if err != nil {
		t.Fatalf("the plugin's output: %v", err)
	}
	return st.Size() <= maxLogSize
}

// adoptSettings keep the adopted stand-in, which serves no socket, from being restarted.
func adoptSettings() Settings {
	s := testSettings
	s.HealthTimeout = time.Hour
	return s
}

// The plugin's log grew past the limit while no agent ran (the agent was killed, the plugin
// left running): the next agent, adopting the plugin, trims it.
func TestAgentTrimsTheLogOfAnAdoptedPlugin(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("hp", "hostpath"))
	pid := f.leftPlugin("hp")
	flood(t, pid, 3*int(maxLogSize)/2)
	stop := f.startAgent(adoptSettings())
	waitFor(t, "the agent to adopt the plugin", func() bool { return strings.Contains(f.logs.String(), "adopted the running plugin") })
	waitFor(t, "the adopted plugin's log to be kept under its limit", func() bool { return outputBounded(t, pid) })
	if st, err := os.Stat(filepath.Join(f.dir, "logs", "hp.log.1")); err != nil || st.Size() == 0 {
		t.Errorf("rotated log: %v, %v", st, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// While no agent ran, the adopted plugin's log was replaced by a symlink (to a large file
// elsewhere) or a named pipe. The agent follows neither: the link's target is left as it is,
// and no log check waits on the pipe. The plugin still writes to the file it was started
// with, unlinked now, which would fill the file system for ever: the agent trims that file,
// reached through the plugin's own descriptor, and warns about what is at the log's path.
func TestAgentTrimsAnAdoptedPluginsLogReplacedWhileItWasDown(t *testing.T) {
	for _, kind := range []string{"symlink", "fifo"} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t)
			f.register(f.execPlugin("hp", "hostpath"))
			pid := f.leftPlugin("hp")
			path := filepath.Join(f.dir, "logs", "hp.log")
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			outside := filepath.Join(t.TempDir(), "precious")
			big := strings.Repeat("z", int(maxLogSize)+1024)
			if err := os.WriteFile(outside, []byte(big), 0o600); err != nil {
				t.Fatal(err)
			}
			switch kind {
			case "symlink":
				if err := os.Symlink(outside, path); err != nil {
					t.Fatal(err)
				}
			case "fifo":
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			flood(t, pid, 3*int(maxLogSize)/2)
			stop := f.startAgent(adoptSettings())
			waitFor(t, "the agent to adopt the plugin", func() bool { return strings.Contains(f.logs.String(), "adopted the running plugin") })
			waitFor(t, "the adopted plugin's output file to be kept under its limit", func() bool { return outputBounded(t, pid) })
			if b, err := os.ReadFile(outside); err != nil || string(b) != big {
				t.Errorf("the file the log's symlink points to was changed: %d bytes, %v", len(b), err)
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode().IsRegular() {
				t.Errorf("the %s at the log's path: %v, %v; want it left", kind, fi, err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(f.logs.String(), path) {
				t.Errorf("the agent log does not name the log path that is not a regular file:\n%s", f.logs)
			}
		})
	}
}
