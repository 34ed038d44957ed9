//go:build !volctl_failpoints

package engine

// failpoint does nothing but run the tests' hook (failpointHook, nil outside tests): this build
// has no failpoints that kill (see FailpointEnv).
func (e *Engine) failpoint(name string) {
	if e.failpointHook != nil {
		e.failpointHook(name)
	}
}
