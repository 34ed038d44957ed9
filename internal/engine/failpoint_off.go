//go:build !volctl_failpoints

package engine

// failpoint does nothing but run the tests' hook (testHookFailpoint, a no-op outside tests): this
// build has no failpoints that kill (see FailpointEnv).
func failpoint(name string) { testHookFailpoint(name) }
