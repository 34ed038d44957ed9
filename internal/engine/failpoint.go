package engine

import (
	"os"
	"strings"
	"syscall"
)

// FailpointEnv names a checkpoint at which volctl kills itself, for crash tests: after the named
// state is committed ("claim:node-staged", "release:node-detached", "create:intent", ...) or right
// after an RPC returns before its result is committed ("rpc:NodeStageVolume"). Several names may be
// given, comma-separated. It costs one map lookup per checkpoint when unset.
const FailpointEnv = "VOLCTL_FAILPOINT"

var failpoints = parseFailpoints(os.Getenv(FailpointEnv))

func parseFailpoints(v string) map[string]bool {
	if v == "" {
		return nil
	}
	out := map[string]bool{}
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out[name] = true
		}
	}
	return out
}

// failpoint kills the process with SIGKILL, as a crash would, when name is armed: no deferred
// function runs, no lock is released by us (the kernel drops flocks), nothing is flushed.
func failpoint(name string) {
	if failpoints[name] {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously; never continue past a failpoint
	}
}
