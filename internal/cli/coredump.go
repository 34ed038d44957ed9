package cli

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/crash"
)

// coreLimit is the RLIMIT_CORE soft limit that keeps a process's core from being written: below
// the smallest core the kernel writes to a file (a page, for ELF), and the one value at which it
// starts no core_pattern pipe handler (fs/coredump.c reserves 1 to stop a handler's own crash
// from recursing: "RLIMIT_CORE is set to 1, aborting core"), where 0 stops a file core only.
const coreLimit = 1

// corePatternPath is the kernel's core_pattern; a test points it elsewhere.
var corePatternPath = "/proc/sys/kernel/core_pattern"

// coreWatchInterval is how often root's volctl checks again what keeps its core unwritten; a
// test shortens it.
var coreWatchInterval = time.Second

// KeepSecretsOutOfCoreDumps keeps the kernel from writing the core of a volctl running as root.
// Its memory holds what the state holds (volumes' secrets and mount flags, plugins' exec envs,
// a Nomad token): a fatal error, or a SIGQUIT or SIGABRT under GOTRACEBACK=crash (an operator's
// setting, to debug), dumped it whole to a core file (in the working directory, or to a
// handler's store such as systemd-coredump or apport), a copy of every secret that outlives the
// state and that no secure_delete wipes. Neither the stack trace volctl prints nor a panic
// (crash.Recover) is touched.
//
// It lowers RLIMIT_CORE's soft limit to 1 (coreLimit), which stops both a file core and a pipe
// handler, and leaves the process dumpable: a non-dumpable process's /proc/PID/ns, exe and fd
// are root's only with CAP_SYS_PTRACE, which a volctl in a Docker container or a hardened unit
// lacks, and other volctl processes read them (the mount-namespace check, a plugin's listener,
// lock holders). The hard limit stays, so the agent gives the plugins it starts the soft limit
// volctl was started with (agent.SetPluginCoreLimit). A core_pattern naming a socket ("@", Linux
// 6.16) ignores RLIMIT_CORE (0 and 1 alike): there volctl makes itself not dumpable (prctl
// PR_SET_DUMPABLE 0) as well, and the checks above fall back on what they can still read. Root
// alone: another user's volctl holds only what that user may read anyway.
//
// Both can change while volctl runs (the agent, for weeks): a systemd upgrade moving
// systemd-coredump to a socket, an operator's prlimit raising the agent's soft limit to debug
// it. So it checks again every coreWatchInterval, for the life of the process (keepCoreUnwritten):
// a crash within that second of the change is the window left.
func KeepSecretsOutOfCoreDumps() {
	if os.Geteuid() != 0 {
		return
	}
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &orig); err != nil {
		orig.Cur = coreLimit // none to give the plugins
	}
	var w coreWatch
	if w.keepCoreUnwritten() && orig.Cur != coreLimit {
		agent.SetPluginCoreLimit(orig)
	}
	crash.Go(func() {
		for {
			time.Sleep(coreWatchInterval)
			w.keepCoreUnwritten()
		}
	})
}

// coreWatch is what keepCoreUnwritten did to the process's dumpability: it raises again only
// what it lowered.
type coreWatch struct{ lowered bool }

// keepCoreUnwritten lowers the soft core limit to coreLimit where it is not, and makes the
// process not dumpable while the limit cannot keep its core unwritten (not lowered: a hard limit
// of 0 stops a file core, not a pipe handler; or core_pattern is a socket, or cannot be read),
// dumpable again once it can, if it was what made it not. It says whether the limit is coreLimit.
func (w *coreWatch) keepCoreUnwritten() bool {
	limited := false
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err == nil {
		limited = lim.Cur == coreLimit
		if !limited && lim.Max >= coreLimit {
			lim.Cur = coreLimit
			limited = unix.Setrlimit(unix.RLIMIT_CORE, &lim) == nil
		}
	}
	pattern, err := os.ReadFile(corePatternPath)
	lower := !limited || err != nil || strings.HasPrefix(string(pattern), "@")
	switch {
	case lower && !w.lowered:
		w.lowered = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) == nil
	case !lower && w.lowered:
		w.lowered = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) != nil
	}
	return limited
}
