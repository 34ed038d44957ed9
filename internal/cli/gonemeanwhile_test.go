package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// signalWriter is a stderr that a command and the test share: it keeps what was written, under
// a lock, and closes seen once the text holds want.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// newHeldCLIHarness is a CLI harness whose plugin (a MemPlugin, not mounting) serves through
// faults, so that a test can hold one volctl's RPC at the plugin (a Fault's Gate) while
// another runs into the lock it holds (commandWhileHeld).
func newHeldCLIHarness(t *testing.T) (*cliHarness, *csitest.Faults, *csitest.MemPlugin) {
	t.Helper()
	ctx := context.Background()
	faults := csitest.NewFaults()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	socket, _ := csitest.Serve(t, csitest.WithServer(mem), csitest.WithFaults(faults))
	h := &cliHarness{ctx: ctx, state: t.TempDir() + "/state"}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	return h, faults, mem
}

// waitHeld waits until faults holds n calls at their gate, closing gate and failing the test
// when none is held within 30 s (what should be held is named by what).
func waitHeld(t *testing.T, faults *csitest.Faults, n int, gate chan struct{}, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); faults.Held() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatalf("%s was never held at the plugin", what)
		}
	}
}

// commandResult is what a command run as a user runs it gave: its exit code and its streams.
type commandResult struct {
	code        int
	out, errOut string
}

// runCommand runs the command line args against the harness's state dir as its own volctl
// process would (its own Factory and engine), through Report, its stderr a terminal when tty
// (where a waiting command draws its progress line), and sends the result on done.
func (h *cliHarness) runCommand(args []string, errOut *signalWriter, tty bool, done chan<- commandResult) {
	out := &bytes.Buffer{}
	ios := &iostreams.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut}
	ios.SetTTY(false, false, tty)
	f := NewFactory(ios)
	root := NewRootCmd(f)
	root.SetArgs(append([]string{"--state-dir", h.state}, args...))
	code := f.Report(f.RedactError(h.ctx, root.Execute()))
	f.Close()
	done <- commandResult{code, out.String(), errOut.String()}
}

// commandWhileHeld runs args as another volctl process while an operation on volume holds its
// lock with a call held at gate: it waits until the command says, on its terminal's stderr,
// that it waits for that lock, then opens gate, and returns what the command gave. The test
// fails, the gate opened, when the command ends first or never says it waits.
func (h *cliHarness) commandWhileHeld(t *testing.T, volume string, gate chan struct{}, args ...string) commandResult {
	t.Helper()
	errOut := &signalWriter{want: fmt.Sprintf("waiting for the lock on volume %q", volume), seen: make(chan struct{})}
	done := make(chan commandResult, 1)
	go h.runCommand(args, errOut, true, done)
	select {
	case <-errOut.seen:
	case r := <-done:
		close(gate)
		t.Fatalf("%v ended (exit %d) before it waited for the operation holding volume %q:\n%s%s", args, r.code, volume, r.out, r.errOut)
	case <-time.After(30 * time.Second):
		close(gate)
		t.Fatalf("%v never said it waited for the lock on volume %q:\n%s", args, volume, errOut.String())
	}
	close(gate)
	return <-done
}

// A `volume claim` that waited for the volume's lock while another volctl deleted the volume
// fails as not found, and says the volume was deleted meanwhile; the command line must not add
// its advice for a volume not found (look in another state dir, another user's, a typo),
// which sends the user after a volume that was there a moment before (Report's notFoundAdvice,
// left out for engine.IsGoneMeanwhile). Through the command and Report, as a user sees it; the
// claim is known to wait for the delete by the progress line it draws on a terminal's stderr.
func TestClaimThatWaitedForADeleteGetsNoAdviceToLookElsewhere(t *testing.T) {
	h, faults, _ := newHeldCLIHarness(t)
	h.createVolume(t, "v", spec.SingleNodeWriter)

	gate := make(chan struct{})
	faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Gate: gate, Times: 1})
	deleted := make(chan error, 1)
	go func() { deleted <- h.e.DeleteVolume(h.ctx, "v") }()
	waitHeld(t, faults, 1, gate, "the delete's DeleteVolume")
	r := h.commandWhileHeld(t, "v", gate, "volume", "claim", "v", "--alloc", "web-0")
	if err := <-deleted; err != nil {
		t.Fatalf("the delete: %v", err)
	}
	if r.code != ExitError || !strings.Contains(r.errOut, `volume "v" was deleted by another volctl meanwhile`) {
		t.Fatalf("claim that waited for the delete: exit %d, stderr:\n%s\nwant exit %d saying the volume was deleted meanwhile", r.code, r.errOut, ExitError)
	}
	if strings.Contains(r.errOut, "volctl looked in state dir") || strings.Contains(r.errOut, "another user") {
		t.Errorf("claim that waited for the delete: stderr:\n%s\nwant no advice to look in another state dir: the volume was there, and was deleted meanwhile", r.errOut)
	}
}

// A command on a volume deleted here before it ran (by another volctl, a script, the agent's
// GC) said "not found" and that volctl may have looked in another state dir: it says now what
// the event log last recorded ending it, and when, and sends the user nowhere else
// (engine.IsNotFoundHere); a volume never here keeps that advice.
func TestCommandOnAVolumeDeletedHereSaysSoNotToLookElsewhere(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "v", spec.SingleNodeWriter)
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := h.runReported("volume", "claim", "v", "--alloc", "web-0")
	if code != ExitError || !strings.Contains(errOut, `volume "v" not found (the event log says, just now: volume "v" deleted`) || strings.Contains(errOut, "volctl looked in state dir") {
		t.Errorf("claim of a volume deleted here: exit %d, stderr:\n%s\nwant exit %d saying when it was deleted, and no advice to look in another state dir", code, errOut, ExitError)
	}
	code, _, errOut = h.runReported("volume", "claim", "never", "--alloc", "web-0")
	if code != ExitError || strings.Contains(errOut, "event log") || !strings.Contains(errOut, "volctl looked in state dir") {
		t.Errorf("claim of a volume never here: exit %d, stderr:\n%s\nwant the advice to look in another state dir", code, errOut)
	}
}

// A claim of a volume whose plugin was deregistered with --force said the plugin is not
// registered, and that volctl may have looked in another state dir: the volume was found here,
// so is its plugin to be registered (engine.IsNotFoundHere).
func TestClaimOfAVolumeWhosePluginIsGoneGetsNoAdviceToLookElsewhere(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "v", spec.SingleNodeWriter)
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := h.runReported("volume", "claim", "v", "--alloc", "web-0")
	if code != ExitError || !strings.Contains(errOut, `plugin "mem" is not registered (volctl plugin register)`) || strings.Contains(errOut, "volctl looked in state dir") {
		t.Errorf("claim of a volume whose plugin is gone: exit %d, stderr:\n%s\nwant exit %d naming the plugin, and no advice to look in another state dir", code, errOut, ExitError)
	}
}
