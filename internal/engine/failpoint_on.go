//go:build volctl_failpoints

package engine

import (
	"os"
	"strings"
	"syscall"
)

// failpoints are the armed names; it costs one map lookup per checkpoint when unset.
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
