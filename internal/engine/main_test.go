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
