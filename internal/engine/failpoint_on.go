//go:build volctl_failpoints

package engine

import (
	"os"
	"strings"
	"syscall"
)

// failpoints are the armed names; it costs one map lookup per checkpoint when unset.
var failpoints = parseFailpoints(os.Getenv(FailpointEnv))

// parseFailpoints maps each armed name to what it does: "kill", or "panic" for a name given
// as NAME=panic, "panic:TEXT" for NAME=panic:TEXT (a panic whose value says TEXT too).
func parseFailpoints(v string) map[string]string {
	if v == "" {
		return nil
	}
	out := map[string]string{}
	for _, name := range strings.Split(v, ",") {
		name, action, _ := strings.Cut(strings.TrimSpace(name), "=")
		if action != "panic" && !strings.HasPrefix(action, "panic:") {
			action = "kill"
		}
		if name != "" {
			out[name] = action
		}
	}
	return out
}

// failpoint kills the process with SIGKILL, as a crash would, when name is armed: no deferred
// function runs, no lock is released by us (the kernel drops flocks), nothing is flushed. Armed
// as NAME=panic, it panics there instead, as a bug would (internal/crash); as NAME=panic:TEXT,
// with TEXT in the panic's value, as a bug's panic carrying data would (a secret: the crash
// report's scrubbing is tested so).
func (e *Engine) failpoint(name string) {
	if e.failpointHook != nil {
		e.failpointHook(name)
	}
	switch failpoints[name] {
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously; never continue past a failpoint
	case "":
	case "panic":
		panic("failpoint " + name)
	default: // panic:TEXT
		panic("failpoint " + name + ": " + strings.TrimPrefix(failpoints[name], "panic:"))
	}
}
