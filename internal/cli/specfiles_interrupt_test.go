package cli

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecReadStopsOnInterrupt: a spec read that blocks (standard input nobody closes, a named
// pipe nobody writes) is where a user presses Ctrl-C. main turns SIGINT into a cancelled
// context, which the read does not watch: the read must give up on the signal itself and say
// nothing was done, rather than leave volctl deaf to Ctrl-C and SIGTERM.
func TestSpecReadStopsOnInterrupt(t *testing.T) {
	// As main does: SIGINT is caught, so the signals sent below never kill the test.
	caught := make(chan os.Signal, 64)
	signal.Notify(caught, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(caught)

	fifo := filepath.Join(t.TempDir(), "pipe.hcl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	stdin, w := io.Pipe() // never written, never closed until the test ends
	defer w.Close()
	for _, tc := range []struct {
		name, arg string
		sig       syscall.Signal
	}{
		{"stdin", "-", syscall.SIGINT},
		{"fifo", fifo, syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := readSpecSources(stdin, nil, []string{tc.arg})
				done <- err
			}()
			// The read registers for the signal at some point: send it until the read returns.
			deadline := time.After(20 * time.Second)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case err := <-done:
					if err == nil || !errors.Is(err, errSpecReadInterrupted) || !strings.Contains(err.Error(), "nothing was done") {
						t.Fatalf("read of %s after %v = %v; want it interrupted, saying nothing was done", tc.arg, tc.sig, err)
					}
					return
				case <-tick.C:
					syscall.Kill(os.Getpid(), tc.sig)
				case <-deadline:
					t.Fatalf("read of %s still blocked 20 s after %v was first sent", tc.arg, tc.sig)
				}
			}
		})
	}
}
