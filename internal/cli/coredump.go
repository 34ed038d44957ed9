package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// KeepSecretsOutOfCoreDumps makes a volctl running as root one the kernel never dumps the core
// of (prctl PR_SET_DUMPABLE 0). Its memory holds what the state holds (volumes' secrets and
// mount flags, plugins' exec envs, a Nomad token): a fatal error, or a SIGQUIT or SIGABRT under
// GOTRACEBACK=crash (an operator's setting, to debug), dumped it whole to a core file (in the
// working directory, or to a handler's store such as systemd-coredump or apport), a copy of
// every secret that outlives the state and that no secure_delete wipes. Neither the stack
// trace volctl prints nor a panic (crash.Recover) is touched. Root alone: for root, the
// flag's other effect, /proc/PID's files root's and ptrace by others refused, changes nothing
// (root's are root's, and root may still read them), where another user's volctl would hide
// its open files from their other volctl processes (the lock holders named by pid). A plugin
// the agent starts is dumpable again: the kernel resets the flag at its exec.
func KeepSecretsOutOfCoreDumps() {
	if os.Geteuid() == 0 {
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
}
