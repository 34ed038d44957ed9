package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// noPtraceEnv, set in a process this test binary starts through WithoutPtrace, makes Start drop
// CAP_SYS_PTRACE from its bounding set and exec the command the variable's companion args name.
const noPtraceEnv = "VOLCTL_TEST_NO_PTRACE"

// WithoutPtrace makes cmd run without CAP_SYS_PTRACE, as every process in a Docker container
// with the default capability set, or under a systemd unit's CapabilityBoundingSet=~CAP_SYS_PTRACE,
// runs: it is started as this test binary (whose TestMain calls Start), which drops the
// capability from its bounding set on the thread that then execs cmd's program, so that root's
// exec gives it every other capability and not that one. No capsh needed. Call it before
// cmd.Start, after setting cmd's Path, Args and Env.
func WithoutPtrace(cmd *exec.Cmd) {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], noPtraceEnv+"="+cmd.Path)
	cmd.Args = append([]string{"volctl-test-no-ptrace"}, cmd.Args...)
	cmd.Path = self
	cmd.Err = nil
}

// execWithoutPtrace runs in the process WithoutPtrace started: it drops CAP_SYS_PTRACE and
// execs path with os.Args[1:] and the environment without noPtraceEnv. It returns only on error.
func execWithoutPtrace(path string) {
	runtime.LockOSThread() // the bounding set is the thread's; the exec is made from it
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "testproc: dropping CAP_SYS_PTRACE: %v\n", err)
		os.Exit(125)
	}
	env := os.Environ()
	kept := env[:0]
	for _, kv := range env {
		if len(kv) < len(noPtraceEnv)+1 || kv[:len(noPtraceEnv)+1] != noPtraceEnv+"=" {
			kept = append(kept, kv)
		}
	}
	err := syscall.Exec(path, os.Args[1:], kept)
	fmt.Fprintf(os.Stderr, "testproc: exec %s: %v\n", path, err)
	os.Exit(126)
}

// HasPtrace reports whether this process's effective set holds CAP_SYS_PTRACE.
func HasPtrace() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_PTRACE) != 0
}
