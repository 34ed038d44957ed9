package cli

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestOutOfFilesAdviceSaysWhatToRaise: an error that met the end of the open files says what to
// raise, whether it wraps the errno (a lock file's open) or keeps only its words (a gRPC error
// from dialing a plugin's socket, or the plugin's own message, when the plugin may be the one
// short of them); the system's table full is told apart, and any other error gets nothing added.
func TestOutOfFilesAdviceSaysWhatToRaise(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("lock volume %q: %w", "db", &syscallErr{syscall.EMFILE}), "ulimit -n 4096"},
		{errors.New(`plugin "hp": rpc error: code = Unavailable desc = dial unix /run/hp.sock: socket: too many open files`), "ulimit -n 4096"},
		{errors.New(`plugin "hp": rpc error: code = Internal desc = mount: too many open files`), "when the words are the plugin's, the plugin"},
		{fmt.Errorf("open: %w", syscall.ENFILE), "fs.file-max"},
		{errors.New("volume \"db\" not found"), ""},
	} {
		got := outOfFilesAdvice(tt.err)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("outOfFilesAdvice(%v) = %q, want it to say %q", tt.err, got, tt.want)
		}
	}
	ios, _, _, errOut := iostreams.Test()
	NewFactory(ios).Report(fmt.Errorf("open state: %w", syscall.EMFILE))
	if !strings.Contains(errOut.String(), "ran out of file descriptors") {
		t.Errorf("Report prints no advice:\n%s", errOut)
	}
}

type syscallErr struct{ errno syscall.Errno }

func (e *syscallErr) Error() string { return "open /x.lock: " + e.errno.Error() }
func (e *syscallErr) Unwrap() error { return e.errno }
