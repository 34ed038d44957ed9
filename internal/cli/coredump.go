package cli

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/agent"
)

// coreLimit is the RLIMIT_CORE soft limit that keeps a process's core from being written: below
// the smallest core the kernel writes to a file (a page, for ELF), and the one value at which it
// starts no core_pattern pipe handler (fs/coredump.c reserves 1 to stop a handler's own crash
// from recursing: "RLIMIT_CORE is set to 1, aborting core"), where 0 stops a file core only.
const coreLimit = 1

// corePatternPath is the kernel's core_pattern; a test points it elsewhere.
var corePatternPath = "/proc/sys/kernel/core_pattern"

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
// 6.16) ignores RLIMIT_CORE: there volctl makes itself not dumpable (prctl PR_SET_DUMPABLE 0)
// as well, and the checks above fall back on what they can still read. Root alone: another
// user's volctl holds only what that user may read anyway.
func KeepSecretsOutOfCoreDumps() {
	if os.Geteuid() != 0 {
		return
	}
	limited := false
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err == nil {
		limited = lim.Cur == coreLimit
		if !limited && lim.Max >= coreLimit {
			orig := lim
			lim.Cur = coreLimit
			if limited = unix.Setrlimit(unix.RLIMIT_CORE, &lim) == nil; limited {
				agent.SetPluginCoreLimit(orig)
			}
		}
	}
	// Not limited (a hard limit of 0 stops a file core, not a pipe handler), or a handler the
	// limit does not stop, or no telling which: no core rather than one.
	pattern, err := os.ReadFile(corePatternPath)
	if !limited || err != nil || strings.HasPrefix(string(pattern), "@") {
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
}
