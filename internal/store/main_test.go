package store

import (
	"os"
	"testing"

	"github.com/volctl/volctl/internal/testproc"
)

// TestMain keeps what the tests start and mount from outliving a test binary that dies
// (internal/testproc).
func TestMain(m *testing.M) {
	testproc.Start()
	os.Exit(m.Run())
}
