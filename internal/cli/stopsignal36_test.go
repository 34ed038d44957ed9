package cli

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// TestInterruptedCommandSaysWhichSignal: a claim, release, delete or reconcile stopped by
// SIGINT or SIGTERM while its plugin had not answered said `NodePublishVolume: context
// canceled (interrupted: ...)`: Go's words for a context ended, naming no signal, which in a
// script's log reads as a bug of volctl's rather than the `timeout 60` or the service manager
// that stopped it. Now the error says which signal (main's cause, StopSignal), and still what
// was done and what is left, exit 1 as the docs give. The plugin blocks in the RPC until the
// test has sent the "signal" (the command's context ended with main's cause), no sleep.
func TestInterruptedCommandSaysWhichSignal(t *testing.T) {
	mem := csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()) // it claims: skips where mounts are not allowed
	_, e, volctl := serveHolding(t, mem)
	createSingleWriter(t, e, "db", "gone")
	for _, c := range []struct {
		rpc, signal string
		args        []string
		want        []string
	}{
		{"NodePublishVolume", "SIGINT", []string{"volume", "claim", "db", "--alloc", "a"},
			[]string{`claim "db" for alloc "a": NodePublishVolume: SIGINT received (interrupted: the claim is left node-staged, not published; ` +
				"`volctl reconcile` will finish publishing it, or `volctl volume release db --alloc a` will undo it)"}},
		{"NodePublishVolume", "SIGTERM", []string{"reconcile"},
			[]string{"reconcile: interrupted (SIGTERM received); what it did is listed", "run `volctl reconcile` again to finish"}},
		{"NodeUnstageVolume", "SIGTERM", []string{"volume", "release", "db", "--alloc", "a"},
			[]string{"NodeUnstageVolume: SIGTERM received (interrupted: the claim is left ", "`volctl reconcile` will finish releasing it"}},
		{"DeleteVolume", "SIGINT", []string{"volume", "delete", "gone", "--yes"}, []string{`delete volume "gone": DeleteVolume: SIGINT received (the volume is marked deleting; run the delete again or ` + "`volctl reconcile`)"}},
	} {
		code, _, errOut := volctl(c.rpc, c.signal, c.args...)
		t.Logf("%s: exit %d, %s", c.args, code, errOut)
		cmd := "volctl " + strings.Join(c.args, " ")
		if code != ExitError {
			t.Errorf("%s stopped by %s: exit %d, want %d; stderr %q", cmd, c.signal, code, ExitError, errOut)
		}
		if strings.Contains(errOut, "context canceled") {
			t.Errorf("%s stopped by %s: stderr %q says Go's context canceled, not the signal", cmd, c.signal, errOut)
		}
		for _, want := range c.want {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s stopped by %s: stderr %q; want it to say %q", cmd, c.signal, errOut, want)
			}
		}
	}
}

// An error of a command no signal stopped is left as it is: a plugin's own words, a deadline.
func TestSaySignalLeavesOtherErrorsAlone(t *testing.T) {
	t.Parallel()
	err := errors.New("NodePublishVolume: context canceled")
	if got := SaySignal(context.Background(), err); got != err {
		t.Errorf("no signal: %v, want the error as it was", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := SaySignal(ctx, err); got != err {
		t.Errorf("a context ended without a signal: %v, want the error as it was", got)
	}
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(StopSignal{Name: "SIGHUP"})
	wrapped := usageError("x: %w", context.Canceled)
	got := SaySignal(ctx, wrapped)
	if got.Error() != "x: SIGHUP received" || ExitCode(got) != ExitUsage {
		t.Errorf("stopped by SIGHUP: %q exit %d; want %q and the error's own exit status", got, ExitCode(got), "x: SIGHUP received")
	}
}

// serveHolding serves mem as plugin "mem" in a state dir of its own, with an interceptor that
// holds the RPC a command names until the command's context ends. volctl runs a command as
// main does; with rpc set, the plugin holds that RPC until the command's context ends with
// signal (main's cause, StopSignal), sent once the RPC is in the plugin: no sleep.
func serveHolding(t *testing.T, mem *csitest.MemPlugin) (string, *engine.Engine, func(rpc, signal string, args ...string) (int, string, string)) {
	t.Helper()
	var mu sync.Mutex
	hang := ""                        // the RPC that blocks until the caller gives up
	arrived := make(chan struct{}, 1) // the hung RPC is in the plugin
	hook := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mu.Lock()
		h := hang
		mu.Unlock()
		if h != "" && strings.HasSuffix(info.FullMethod, "/"+h) {
			arrived <- struct{}{}
			<-ctx.Done() // the client's cancel, sent when the command's context ends
			return nil, ctx.Err()
		}
		return handler(ctx, req)
	}
	socket, e, _ := serveMem(t, mem, csitest.WithInterceptor(hook))
	state := e.StateDir()
	volctl := func(rpc, signal string, args ...string) (int, string, string) {
		t.Helper()
		mu.Lock()
		hang = rpc
		mu.Unlock()
		defer func() { mu.Lock(); hang = ""; mu.Unlock() }()
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		ios, _, out, errOut := iostreams.Test()
		f := NewFactory(ios)
		inStateDir(f, state)
		root := NewRootCmd(f)
		root.SetArgs(args)
		done := make(chan error, 1)
		go func() { done <- root.ExecuteContext(ctx) }()
		if rpc != "" {
			select {
			case <-arrived:
				cancel(StopSignal{Name: signal})
			case err := <-done:
				f.Close()
				t.Fatalf("volctl %s ended before %s reached the plugin: %v", strings.Join(args, " "), rpc, err)
			}
		}
		err := <-done
		code := f.Report(SaySignal(ctx, f.RedactError(ctx, err)))
		f.Close()
		return code, out.String(), errOut.String()
	}
	return socket, e, volctl
}
