package cli

import (
	"bytes"
	"context"
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

// A `volume claim` that waited for the volume's lock while another volctl deleted the volume
// fails as not found, and says the volume was deleted meanwhile; the command line must not add
// its advice for a volume not found (look in another state dir, another user's, a typo),
// which sends the user after a volume that was there a moment before (Report's notFoundAdvice,
// left out for engine.IsGoneMeanwhile). Through the command and Report, as a user sees it; the
// claim is known to wait for the delete by the progress line it draws on a terminal's stderr.
func TestClaimThatWaitedForADeleteGetsNoAdviceToLookElsewhere(t *testing.T) {
	ctx := context.Background()
	faults := csitest.NewFaults()
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())), csitest.WithFaults(faults))
	h := &cliHarness{ctx: ctx, state: t.TempDir() + "/state"}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	h.createVolume(t, "v", spec.SingleNodeWriter)

	gate := make(chan struct{})
	faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Gate: gate, Times: 1})
	deleted := make(chan error, 1)
	go func() { deleted <- h.e.DeleteVolume(ctx, "v") }()
	for deadline := time.Now().Add(10 * time.Second); faults.Held() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatal("the delete's DeleteVolume was never held at the plugin")
		}
	}

	errOut := &signalWriter{want: `waiting for the lock on volume "v"`, seen: make(chan struct{})}
	ios := &iostreams.IOStreams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: errOut}
	ios.SetTTY(false, false, true) // the progress line says when the claim waits for the lock
	claimed := make(chan int, 1)
	go func() {
		f := NewFactory(ios)
		root := NewRootCmd(f)
		root.SetArgs([]string{"--state-dir", h.state, "volume", "claim", "v", "--alloc", "web-0"})
		err := root.Execute()
		code := f.Report(f.RedactError(ctx, err))
		f.Close()
		claimed <- code
	}()
	select {
	case <-errOut.seen:
	case code := <-claimed:
		close(gate)
		t.Fatalf("the claim ended (exit %d) before it waited for the delete:\n%s", code, errOut.String())
	case <-time.After(30 * time.Second):
		close(gate)
		t.Fatalf("the claim never said it waited for the volume's lock:\n%s", errOut.String())
	}
	close(gate)
	if err := <-deleted; err != nil {
		t.Fatalf("the delete: %v", err)
	}
	code := <-claimed
	said := errOut.String()
	if code != ExitError || !strings.Contains(said, `volume "v" was deleted by another volctl meanwhile`) {
		t.Fatalf("claim that waited for the delete: exit %d, stderr:\n%s\nwant exit %d saying the volume was deleted meanwhile", code, said, ExitError)
	}
	if strings.Contains(said, "volctl looked in state dir") || strings.Contains(said, "another user") {
		t.Errorf("claim that waited for the delete: stderr:\n%s\nwant no advice to look in another state dir: the volume was there, and was deleted meanwhile", said)
	}
}
