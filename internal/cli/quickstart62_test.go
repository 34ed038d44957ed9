package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// pipeClosedAt is quickstart's stdout piped into `head`: once a line holding mark is
// written, the reader is gone and every later write fails with EPIPE.
type pipeClosedAt struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark string
}

func (w *pipeClosedAt) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Contains(w.buf.String(), w.mark) {
		return 0, syscall.EPIPE
	}
	return w.buf.Write(p)
}

// leftoverAdvice are the words of an error that say something was left in a state
// dir and what to run on it. Quickstart's state dir is gone by the time its error is printed
// ("Cleaned up: ... is gone."), so such a command would act on the user's own state dir.
var leftoverAdvice = []string{"the claim stands", "volctl volume release", "volctl reconcile", "the claim is left"}

// `volctl quickstart | head -32`: the reader is gone when the claim prints its target. The
// claim command's own words follow: "the claim stands: `volctl volume claim demo --alloc web-0`
// prints its target path again, `volctl volume release demo --alloc web-0` releases it". But
// quickstart's cleanup has released the claim and removed its state dir (stderr says
// "Cleaned up: ... is gone." just before). The last line a new user read said the opposite
// of what happened and told them to run commands against their own state dir. Now it says the
// output could not be written and nothing is left (cleanedUp). Found by helper review62.
func TestQuickstartErrorsAfterItsCleanupAdviseNothingOnItsState(t *testing.T) {
	hostpathtest.RequireMount(t) // volctl checks the claim's target is a mount point
	parent := hostpathtest.MountDir(t)
	ios, _, _, errOut := iostreams.Test()
	out := &pipeClosedAt{mark: "$ volctl volume claim demo"}
	ios.Out = out
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent})
	if err == nil {
		t.Fatalf("quickstart with its reader gone at the claim succeeded\nstdout:\n%s", out.buf.String())
	}
	if !strings.Contains(errOut.String(), "Cleaned up:") {
		t.Fatalf("stderr = %q, want the clean-up note", errOut)
	}
	saysNothingIsLeft(t, err, errOut.String(), "quickstart: writing its output failed: broken pipe")
	assertCleanedUp(t, parent)
}

// saysNothingIsLeft fails the test unless quickstart's error err, its cleanup said on stderr,
// begins with want, says nothing is left, and names none of the commands for a state dir.
func saysNothingIsLeft(t *testing.T, err error, stderr, want string) {
	t.Helper()
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "nothing is left to finish or undo") {
		t.Errorf("quickstart's error after its cleanup = %v\nwant it to begin %q and say nothing is left", err, want)
	}
	for _, w := range leftoverAdvice {
		if strings.Contains(err.Error(), w) {
			t.Errorf("after %q quickstart's error says %q, though it released the claim and removed its state dir:\n%v",
				strings.TrimSpace(stderr), w, err)
		}
	}
}

// cancelOnMount is the plugin's Mounter cancelling the command's context (Ctrl-C) while
// NodeStageVolume runs, then letting the RPC finish as the plugin, which outlives the steps,
// does.
type cancelOnMount struct {
	*hostpathtest.FakeMounter
	cancel context.CancelFunc
}

func (m *cancelOnMount) BindMount(source, target, carry string, flags uintptr) error {
	m.cancel()
	time.Sleep(200 * time.Millisecond) // the client sees its context end before the answer
	return m.FakeMounter.BindMount(source, target, carry, flags)
}

// Ctrl-C during the claim's NodeStageVolume: quickstart cleans up (releases the claim, removes
// the directory, "Cleaned up: ... is gone.") and then ends with the engine's note for a claim
// command interrupted on its own: "the claim is left controller-published, not published;
// `volctl reconcile` will finish publishing it, or `volctl volume release demo --alloc web-0`
// will undo it". Neither held: the claim and its state dir are gone; run as told, both acted on
// the user's own state dir. Now it says it was interrupted and nothing is left. Found by
// helper review62.
func TestInterruptedQuickstartSaysNothingIsLeft(t *testing.T) {
	parent := hostpathtest.ShortDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ios, _, out, errOut := iostreams.Test()
	err := quickstartRun(ctx, &QuickstartOptions{IO: ios, TempDir: parent,
		mounter: &cancelOnMount{FakeMounter: &hostpathtest.FakeMounter{}, cancel: cancel}})
	if err == nil || !strings.Contains(err.Error(), "quickstart: interrupted") {
		t.Fatalf("err = %v, want an interrupt\nstdout:\n%s", err, out)
	}
	if !strings.Contains(errOut.String(), "Cleaned up:") {
		t.Fatalf("stderr = %q, want the clean-up note", errOut)
	}
	saysNothingIsLeft(t, err, errOut.String(), "quickstart: interrupted; cleaned up")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the interrupted quickstart's error %v is not context.Canceled, which the command line's exit reads", err)
	}
	assertCleanedUp(t, parent)
}

// quickstart makes its directory under $TMPDIR, which the user never typed on its command
// line. With TMPDIR naming a directory that is gone the error is "quickstart: stat /x/gone: no
// such file or directory": it does not say the path is $TMPDIR nor what to do, where the
// socket-length check of the same run says "set TMPDIR to a shorter directory". Now it names
// $TMPDIR and says to set it. Found by helper review62.
func TestQuickstartWithAMissingTMPDIRNamesIt(t *testing.T) {
	gone := filepath.Join(hostpathtest.ShortDir(t), "gone")
	t.Setenv("TMPDIR", gone)
	ios, _, _, _ := iostreams.Test()
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, mounter: &hostpathtest.FakeMounter{}})
	if err == nil {
		t.Fatal("quickstart with TMPDIR missing succeeded")
	}
	if !strings.Contains(err.Error(), "TMPDIR") || !strings.Contains(err.Error(), gone) {
		t.Errorf("error does not say the directory is $TMPDIR (nor to set it): %v", err)
	}
}
