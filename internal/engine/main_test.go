package engine

import (
	"os"
	"testing"

	"github.com/volctl/volctl/internal/testproc"
)

// TestMain keeps what the tests start and mount from outliving a test binary that dies
// (internal/testproc).
func TestMain(m *testing.M) {
	supervisorChild() // the test binary as a supervisor that listens for its plugin (hostile29_test.go): never returns
	execPluginChild() // the test binary as a plugin that exec()s (hostile28_test.go): never returns
	testproc.Start()
	os.Exit(m.Run())
}

// swapsGlobals marks t as a test that swaps package-level state for its duration (a hook such
// as peerInodeOf, procRoot, noOpenat2 or a testHook*): such a test must stay serial, as
// go test runs every serial top-level test before the parallel ones, which read that state.
// t.Setenv is the testing package's own guard for that: it panics if t or a test above it is
// parallel, and makes a later t.Parallel on t panic. The variable it sets says which test
// swapped what, to a process the test starts.
func swapsGlobals(t *testing.T, what string) {
	t.Helper()
	t.Setenv("VOLCTL_ENGINE_TEST_SWAPPED", what)
}
