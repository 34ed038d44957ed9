package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// Standard output that cannot be written (a full disk behind `> file`): a command whose output
// is lost does not exit 0, even when what printed it did not check the write (cobra's help).
// Before, `volctl --help > /dev/full` and `volctl volume create v.hcl > /dev/full` exited 0.
func TestLostOutputIsAnError(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{{"--help"}, {"help", "volume"}, {"volume", "--help"}} {
		var errOut bytes.Buffer
		f := NewFactory(&iostreams.IOStreams{In: strings.NewReader(""), Out: &iostreams.Stdout{File: full}, ErrOut: &errOut})
		t.Setenv("VOLCTL_STATE_DIR", t.TempDir())
		err := NewRootCmdFor(f, args).ExecuteContext(context.Background())
		if code := f.Report(err); code != ExitError {
			t.Errorf("volctl %s > /dev/full: exit status %d, want %d", strings.Join(args, " "), code, ExitError)
		}
		if !strings.Contains(errOut.String(), "no space left on device") || !strings.Contains(errOut.String(), "standard output") {
			t.Errorf("volctl %s > /dev/full: stderr %q, want it to say standard output could not be written and why", strings.Join(args, " "), errOut.String())
		}
	}
}

// A reader that closed the pipe chose to read no more: once a stop signal has taken SIGPIPE's
// kill away, the write's EPIPE is as silent as that kill, not an "Error: ... broken pipe".
func TestClosedPipeIsNoError(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	var errOut bytes.Buffer
	f := NewFactory(&iostreams.IOStreams{In: strings.NewReader(""), Out: &iostreams.Stdout{File: w}, ErrOut: &errOut})
	t.Setenv("VOLCTL_STATE_DIR", t.TempDir())
	err = NewRootCmdFor(f, []string{"--help"}).ExecuteContext(context.Background())
	if code := f.Report(err); code != 0 || errOut.Len() != 0 {
		t.Errorf("volctl --help into a closed pipe: exit status %d, stderr %q; want 0 and nothing", code, errOut.String())
	}
}
