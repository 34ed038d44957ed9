package cli

import (
	"fmt"
	"testing"

	"github.com/volctl/volctl/internal/crash"
)

// A panic a library recovered (bubbletea's, in the TUI) exits with the crash code, as one
// crash.Recover catches does, not 1.
func TestRecoveredPanicExitsWithTheCrashCode(t *testing.T) {
	if got := ExitCode(fmt.Errorf("tui: %w", crash.ErrPanicked)); got != crash.ExitCode {
		t.Errorf("ExitCode of a recovered panic = %d; want %d", got, crash.ExitCode)
	}
}
