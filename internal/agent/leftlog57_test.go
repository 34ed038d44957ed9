package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// A plugin registered again without an exec block while its process holds mounts is left
// running, no runner supervising it (TestAgentSaysAPluginWhoseExecBlockWasRemovedIsLeftToTheUser);
// the agent kept only its runners' logs bounded, so the log this process writes to grew
// unchecked, on the file system the store is on, for as long as it ran. It is kept bounded
// while the process runs, as a supervised plugin's is.
func TestLogOfAPluginLeftRunningStaysBounded(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("fuse", "sickens")
	pid := f.sickensUnderAClaim(sp)
	bare := sp
	bare.Exec = nil
	f.register(bare)
	waitFor(t, "the process to be left running with no runner", func() bool {
		sv := f.plugin("fuse").Supervision
		return sv != nil && sv.Mode == engine.SupervisionLeft && sv.Pid == pid
	})

	root := filepath.Join(f.dir, "hostpath-fuse")
	if err := os.WriteFile(filepath.Join(root, "flood"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the left plugin to have flooded its log (at the agent's next probe)", func() bool {
		_, err := os.Stat(filepath.Join(root, "flood"))
		return os.IsNotExist(err)
	})
	log := filepath.Join(f.dir, "logs", "fuse.log")
	waitFor(t, "the left plugin's log to be rotated and kept under its limit", func() bool {
		st, err := os.Stat(log)
		_, rerr := os.Stat(log + ".1")
		return err == nil && st.Size() <= maxLogSize && rerr == nil
	})
	if !alive(pid) {
		t.Fatalf("the plugin pid %d left under its mount was stopped", pid)
	}
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
}
