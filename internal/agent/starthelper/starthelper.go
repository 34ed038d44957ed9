// Package starthelper is the process the agent starts for a plugin before the plugin runs
// (docs/architecture.md, the agent's pid files): it waits for the go-ahead, then execs the
// plugin's command. It is a package of its own, with nothing but the standard library and
// x/sys/unix, so that a program built of it alone is small (internal/agent's tests start one
// built without -race, testdata/starthelper, instead of their race-built test binary).
package starthelper

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The agent records a plugin's process before the plugin runs (startProcess): it starts the
// process as its own binary (/proc/self/exe) with Env set, records its pid and start
// time, then gives it the go-ahead on a pipe (the process's fd 3), and only then does the
// process exec the plugin's command, keeping its pid and start time. An agent killed before the
// go-ahead closes the pipe by dying: the process sees the end of the pipe and exits without
// running the plugin. So no plugin runs that its pid file does not name: the next agent never
// takes an agent's plugin for a foreign one, nor starts a second one beside it.
const Env = "VOLCTL_AGENT_START_HELPER"

// Arg0 is the process's name until it execs the plugin.
const Arg0 = "volctl-agent-start"

// GoAheadFD is the pipe's end the process reads the go-ahead from; ExecErrFD the one it writes
// why it could not exec the plugin's command to. ExecErrFD is closed on exec: the agent reading
// its end to the end, with nothing, knows the plugin's command runs.
const (
	GoAheadFD = 3
	ExecErrFD = 4
)

// init runs the start helper in any binary that links the agent: volctl, and the tests'
// binaries. It never returns in a process the agent started so: the variable set and its name
// Arg0 (the variable alone, left in a user's environment, does not make a volctl
// command a helper).
func init() {
	if os.Getenv(Env) == "" || len(os.Args) == 0 || os.Args[0] != Arg0 {
		return
	}
	os.Exit(Run(os.Args, os.Environ()))
}

// Run waits for the go-ahead, then execs args[1] with the arguments args[2:] (the
// plugin's argv, its name first) and env without Env. It returns only when it does
// not exec.
func Run(args, env []string) int {
	var b [1]byte
	n, err := syscall.Read(GoAheadFD, b[:])
	for errors.Is(err, syscall.EINTR) {
		n, err = syscall.Read(GoAheadFD, b[:])
	}
	_ = syscall.Close(GoAheadFD)
	if n != 1 || b[0] != 'y' {
		helperLog("the agent ended before recording the plugin's process: not starting it")
		return 0
	}
	if len(args) < 3 {
		helperLog("no command")
		return 127
	}
	kept := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, Env+"=") {
			kept = append(kept, kv)
		}
	}
	closeOnExecAbove2() // ExecErrFD among them: its closing at the exec says the plugin runs
	err = syscall.Exec(args[1], args[2:], kept)
	helperLog(fmt.Sprintf("starting %s: %v", args[1], err))
	_, _ = syscall.Write(ExecErrFD, []byte(err.Error()))
	return 127
}

// helperLog writes a line to the plugin's log (the process's stderr), as startProcess does.
func helperLog(msg string) {
	fmt.Fprintf(os.Stderr, "%s volctl agent: %s\n", time.Now().Format(time.RFC3339), msg)
}

// closeOnExecAbove2 marks every descriptor but stdin, stdout and stderr close-on-exec, so that
// the plugin gets those three only. Go's exec passes on every descriptor the agent holds without
// close-on-exec: none it opens, but any its starter left open (a shell's, sudo's, a CI runner's,
// a wrapper's, on a file of secrets) would reach every plugin, a third party's program
// (TestPluginInheritsNoDescriptorOfTheAgents). close_range(2) marks them at once (Linux 5.11);
// before it, each descriptor /proc/self/fd lists is marked.
func closeOnExecAbove2() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
