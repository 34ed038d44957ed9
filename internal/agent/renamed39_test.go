package agent

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// agent39: a plugin whose process, restarted by the agent after it died, answers on its socket
// as another driver (its binary replaced by another's, or another package's on the same path):
// no volume RPC may go to it, and plugin status must say why. The agent's probe asks the
// driver's name (checkHealth): the plugin shows unhealthy, naming both drivers and what to do,
// and its registered fingerprint is kept, not overwritten by the other's. Once the right
// driver answers again (restarted after it died too), it is healthy again: the honest case.
// (It held; no test said so.)
func TestAgentRestartAnsweredByAnotherDriverShowsUnhealthy(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("rn", "renamed")
	root := sp.Exec.Env.Plain()[pluginRootEnv]
	f.register(sp)
	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("rn").Healthy })
	driver := f.plugin("rn").Provider
	restart := func() {
		t.Helper()
		pid := f.pid("rn")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the plugin to be started again", func() bool { p := f.pid("rn"); return p != 0 && p != pid })
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "renamed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	restart()
	want := `now served by "other.driver.test", registered as "` + driver + `": no volume RPC goes to it`
	waitFor(t, "the plugin to show unhealthy, naming the other driver", func() bool {
		p := f.plugin("rn")
		return !p.Healthy && strings.Contains(p.LastError, want)
	})
	if p := f.plugin("rn"); p.Provider != driver {
		t.Errorf("the registered driver after another answered: %q; want %q kept", p.Provider, driver)
	}
	if err := os.Remove(filepath.Join(root, "renamed")); err != nil {
		t.Fatal(err)
	}
	restart()
	waitFor(t, "the plugin to be healthy again as its own driver", func() bool {
		p := f.plugin("rn")
		return p.Healthy && p.Provider == driver
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
