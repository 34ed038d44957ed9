package cli

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
)

// TestReconcileInterruptedAfterAProblemSaysItWasInterrupted: `volctl reconcile` finds a
// problem (volume "a"'s interrupted delete refused by the plugin), then is stopped by SIGINT
// while the plugin has not answered volume "b"'s DeleteVolume. The engine's error says so
// ("reconcile: interrupted (SIGINT received); ... run `volctl reconcile` again to finish"), but
// the command drops it whenever a problem was found before the signal: stderr says only
// "reconcile: 1 problem(s) remain; fix them and run `volctl reconcile` again", as of a pass that
// looked at everything. The user (or a script's log) is told the one problem is all that is
// left, while "b"'s delete, and everything the pass did not get to, was never looked at, and
// no word says the command was stopped, nor by which signal. Correct: an interrupted pass says
// it was interrupted (naming the signal) and that what it did not get to is left, whatever
// problems it found before, as it does when it found none, and --json says the pass was not
// complete. Found by helper review79 (reconcile).
func TestReconcileInterruptedAfterAProblemSaysItWasInterrupted(t *testing.T) {
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	var mu sync.Mutex
	mode := "" // "hang": every DeleteVolume held; "fail-a": a's refused, the others held
	failExt := ""
	arrived := make(chan struct{}, 4)
	hook := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasSuffix(info.FullMethod, "/DeleteVolume") {
			return handler(ctx, req)
		}
		mu.Lock()
		m, fail := mode, failExt
		mu.Unlock()
		if m == "" {
			return handler(ctx, req)
		}
		if dr, ok := req.(*csipb.DeleteVolumeRequest); ok && m == "fail-a" && dr.GetVolumeId() == fail {
			return nil, status.Error(codes.FailedPrecondition, "storage backend refuses the delete")
		}
		arrived <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	_, e, _ := serveMem(t, mem, csitest.WithInterceptor(hook))
	state := e.StateDir()
	createSingleWriter(t, e, "a", "b")
	vi, err := e.Volume(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	// Both deletes cut short while the plugin holds DeleteVolume: both volumes left deleting.
	mu.Lock()
	mode = "hang"
	mu.Unlock()
	for _, id := range []string{"a", "b"} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.DeleteVolume(ctx, id) }()
		select {
		case <-arrived:
			cancel()
		case err := <-done:
			cancel()
			t.Fatalf("delete %q ended before DeleteVolume reached the plugin: %v", id, err)
		}
		<-done
		if v, err := e.Volume(context.Background(), id); err != nil || v.State != "deleting" {
			t.Fatalf("precondition: volume %q after its delete was cut short: %+v, %v; want deleting", id, v, err)
		}
	}
	mu.Lock()
	mode, failExt = "fail-a", vi.ExternalID
	mu.Unlock()

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios)
	inStateDir(f, state)
	root := NewRootCmd(f)
	root.SetArgs([]string{"reconcile", "--json"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	select {
	case <-arrived:
		cancel(StopSignal{Name: "SIGINT"})
	case err := <-done:
		f.Close()
		t.Fatalf("reconcile ended before b's DeleteVolume reached the plugin: %v; stderr %q", err, errOut.String())
	}
	err = <-done
	code := f.Report(SaySignal(ctx, f.RedactError(ctx, err)))
	f.Close()
	stderr := errOut.String()
	t.Logf("exit %d, stderr %q", code, stderr)
	if !strings.Contains(stderr, `volume "a"`) {
		t.Fatalf("precondition: stderr %q does not report volume a's refused delete as a problem", stderr)
	}
	if code != ExitError {
		t.Errorf("reconcile stopped by SIGINT: exit %d, want %d", code, ExitError)
	}
	var rep struct {
		Problems []json.RawMessage `json:"problems"`
		Complete *bool             `json:"complete"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("reconcile --json printed %q: %v", out.String(), err)
	}
	if len(rep.Problems) != 1 || rep.Complete == nil || *rep.Complete {
		t.Errorf("reconcile --json cut short by SIGINT: %s; want volume a's problem and \"complete\": false (what the pass did not get to is left)", out.String())
	}
	for _, want := range []string{"interrupted", "SIGINT received"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("reconcile stopped by SIGINT after it found a problem: stderr %q; want it to say %q (the pass was cut short, volume b's delete and the rest not looked at), not only that 1 problem remains", stderr, want)
		}
	}
}
