package cli

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestSpecReadStopsOnInterrupt: a spec read that blocks (standard input nobody closes, a named
// pipe nobody writes) is where a user presses Ctrl-C, which main turns into the command's
// context ending. The read gives up then and says nothing was done, rather than leave volctl
// deaf to Ctrl-C and SIGTERM (cmd/volctl: TestCtrlCWhileASpecIsRead, through the signal).
func TestSpecReadStopsOnInterrupt(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.hcl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	stdin, w := io.Pipe() // never written, never closed until the test ends
	defer w.Close()
	ios, _, _, _ := iostreams.Test()
	ios.In = stdin
	for _, arg := range []string{"-", fifo} {
		t.Run(filepath.Base(arg), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := readSpecSources(ctx, ios, nil, []string{arg})
				done <- err
			}()
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, errSpecReadInterrupted) || !strings.Contains(err.Error(), "nothing was done") {
					t.Fatalf("read of %s after the context ended = %v; want it interrupted, saying nothing was done", arg, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("read of %s still blocked 20 s after the context ended", arg)
			}
		})
	}
}
