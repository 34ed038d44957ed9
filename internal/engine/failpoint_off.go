//go:build !volctl_failpoints

package engine

// failpoint does nothing: this build has no failpoints (see FailpointEnv).
func failpoint(string) {}
