package csitest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// serve puts a default MemPlugin behind f on a socket and returns a client with the given
// timeouts.
func serve(t *testing.T, f *csitest.Faults, timeouts csi.Timeouts) (*csitest.MemPlugin, *csi.Client) {
	t.Helper()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	socket, _ := csitest.Serve(t, csitest.WithServer(mem), csitest.WithFaults(f))
	c := csitest.NewClient(t, csi.Config{ControllerSocket: socket, NodeSocket: socket, Timeouts: timeouts})
	return mem, c
}

// waitIdle lets the server notice calls the client already gave up on before counts are read.
func waitIdle(t *testing.T, f *csitest.Faults) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.WaitIdle(ctx); err != nil {
		t.Fatalf("calls still in flight: %v", err)
	}
}

func info(c *csi.Client) error {
	_, err := c.GetPluginInfo(context.Background())
	return err
}

func TestFaultsCodesAndCounts(t *testing.T) {
	tests := []struct {
		name   string
		inject func(f *csitest.Faults)
		want   []codes.Code // the codes of successive calls
	}{
		{"nothing", func(f *csitest.Faults) {}, []codes.Code{codes.OK, codes.OK}},
		{"once", func(f *csitest.Faults) { f.FailOnce(csi.RPCGetPluginInfo, codes.Internal) }, []codes.Code{codes.Internal, codes.OK, codes.OK}},
		{"next three then succeed", func(f *csitest.Faults) { f.FailNext(csi.RPCGetPluginInfo, codes.Unavailable, 3) },
			[]codes.Code{codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.OK}},
		{"always", func(f *csitest.Faults) { f.FailAlways(csi.RPCGetPluginInfo, codes.PermissionDenied) },
			[]codes.Code{codes.PermissionDenied, codes.PermissionDenied, codes.PermissionDenied}},
		{"queued in order", func(f *csitest.Faults) {
			f.FailOnce(csi.RPCGetPluginInfo, codes.Aborted)
			f.FailNext(csi.RPCGetPluginInfo, codes.NotFound, 2)
		}, []codes.Code{codes.Aborted, codes.NotFound, codes.NotFound, codes.OK}},
		{"other RPCs untouched", func(f *csitest.Faults) { f.FailAlways(csi.RPCProbe, codes.Internal) }, []codes.Code{codes.OK}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := csitest.NewFaults()
			mem, c := serve(t, f, csi.Timeouts{})
			tt.inject(f)
			failed := 0
			for i, want := range tt.want {
				err := info(c)
				if got := csi.CodeOf(err); got != want {
					t.Fatalf("call %d: code %v (%v), want %v", i, got, err, want)
				}
				if err != nil {
					failed++
				}
			}
			if got := f.Count(csi.RPCGetPluginInfo); got != (csitest.Count{Calls: len(tt.want), Failed: failed}) {
				t.Fatalf("Count = %+v, want %d calls, %d failed", got, len(tt.want), failed)
			}
			// Faulted calls never reach the plugin.
			if n := mem.CallCount(csi.RPCGetPluginInfo); n != len(tt.want)-failed {
				t.Fatalf("the plugin saw %d calls, want %d", n, len(tt.want)-failed)
			}
		})
	}
}

func TestFaultsCustomMessageAndFailedHandlerCounts(t *testing.T) {
	f := csitest.NewFaults()
	_, c := serve(t, f, csi.Timeouts{})
	f.Inject(csi.RPCGetPluginInfo, csitest.Fault{Code: codes.DataLoss, Message: "disk on fire", Times: 1})
	if err := info(c); err == nil || err.(*csi.Error).Message != "disk on fire" {
		t.Fatalf("GetPluginInfo = %v, want the injected message", err)
	}
	// A failure of the server itself counts as failed too.
	err := c.NodeUnstageVolume(context.Background(), csi.NodeUnstageVolumeRequest{VolumeID: "unknown", StagingPath: "/s"})
	if csi.CodeOf(err) != codes.NotFound {
		t.Fatalf("NodeUnstageVolume = %v", err)
	}
	if got := f.Count(csi.RPCNodeUnstageVolume); got != (csitest.Count{Calls: 1, Failed: 1}) {
		t.Fatalf("Count = %+v", got)
	}
	counts := f.Counts()
	if len(counts) != 2 || counts[csi.RPCGetPluginInfo].Failed != 1 {
		t.Fatalf("Counts = %+v", counts)
	}
}

func TestFaultsDelayAndHang(t *testing.T) {
	f := csitest.NewFaults()
	// Long enough for a call to reach the server on a loaded machine (at 50ms, one under -race
	// in a busy CI run timed out before the server counted it); each timeout below costs it once.
	_, c := serve(t, f, csi.Timeouts{Short: 500 * time.Millisecond})

	f.Delay(csi.RPCGetPluginInfo, time.Millisecond)
	if err := info(c); err != nil {
		t.Fatalf("a delay within the timeout failed the call: %v", err)
	}
	f.Clear(csi.RPCGetPluginInfo)

	f.Delay(csi.RPCGetPluginInfo, time.Hour)
	err := info(c)
	if csi.CodeOf(err) != codes.DeadlineExceeded || !csi.IsRetryable(err) {
		t.Fatalf("a delay past the timeout = %v, want a retryable DeadlineExceeded", err)
	}
	f.Clear()

	f.Hang(csi.RPCGetPluginInfo)
	err = info(c)
	if csi.CodeOf(err) != codes.DeadlineExceeded || !csi.IsRetryable(err) {
		t.Fatalf("a hang = %v, want a retryable DeadlineExceeded", err)
	}
	waitIdle(t, f)
	if got := f.Count(csi.RPCGetPluginInfo); got != (csitest.Count{Calls: 3, Failed: 2}) {
		t.Fatalf("Count = %+v, want 3 calls, 2 failed", got)
	}

	// A counted hang passes after its count.
	f.Reset()
	f.Inject(csi.RPCGetPluginInfo, csitest.Fault{Hang: true, Times: 1})
	if err := info(c); csi.CodeOf(err) != codes.DeadlineExceeded {
		t.Fatalf("first call = %v, want DeadlineExceeded", err)
	}
	if err := info(c); err != nil {
		t.Fatalf("second call = %v, want success", err)
	}
	waitIdle(t, f)
	if got := f.Count(csi.RPCGetPluginInfo); got != (csitest.Count{Calls: 2, Failed: 1}) {
		t.Fatalf("Count after Reset = %+v", got)
	}
}

// TestStopKillsInFlightCalls: stopping the server mid-call (a plugin killed) fails the call
// as Unavailable, which is retryable.
func TestStopKillsInFlightCalls(t *testing.T) {
	f := csitest.NewFaults()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	socket, stop := csitest.Serve(t, csitest.WithServer(mem), csitest.WithFaults(f))
	c := csitest.NewClient(t, csi.Config{NodeSocket: socket})
	f.Hang(csi.RPCNodeGetInfo)
	done := make(chan error, 1)
	go func() { _, err := c.NodeGetInfo(context.Background()); done <- err }()
	for f.Calls(csi.RPCNodeGetInfo) == 0 {
		time.Sleep(time.Millisecond)
	}
	stop()
	err := <-done
	if !csi.IsRetryable(err) {
		t.Fatalf("a call into a killed plugin = %v, want retryable", err)
	}
	// And the plugin comes back at the same path.
	csitest.ServeAt(t, socket, csitest.WithServer(mem))
	var info csi.NodeInfo
	for deadline := time.Now().Add(10 * time.Second); ; {
		if info, err = c.NodeGetInfo(context.Background()); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || info.NodeID == "" {
		t.Fatalf("after restart NodeGetInfo = %+v, %v", info, err)
	}
}

func TestFaultsConcurrentFailNext(t *testing.T) {
	f := csitest.NewFaults()
	_, c := serve(t, f, csi.Timeouts{})
	f.FailNext(csi.RPCGetPluginInfo, codes.Unavailable, 10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := info(c); err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed != 10 || f.Failed(csi.RPCGetPluginInfo) != 10 || f.Calls(csi.RPCGetPluginInfo) != 40 {
		t.Fatalf("%d failed (counted %d of %d calls), want exactly 10", failed, f.Failed(csi.RPCGetPluginInfo), f.Calls(csi.RPCGetPluginInfo))
	}
}

func TestServeNeedsAServer(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { recover() }()
		csitest.Serve(ft, csitest.WithServer(struct{}{}))
	}()
	if !ft.fataled {
		t.Fatal("Serve accepted a value that implements no CSI service")
	}
}

// fatalRecorder turns Fatalf into a panic the test recovers, to check a helper refuses misuse.
type fatalRecorder struct {
	testing.TB
	fataled bool
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.fataled = true
	panic("fatal")
}

// Echo makes every error, injected or the plugin's own, carry every secret and mount flag the
// plugin was ever sent, in whichever RPC.
func TestFaultsEcho(t *testing.T) {
	f := csitest.NewFaults()
	mem, c := serve(t, f, csi.Timeouts{})
	mem.AddVolume(csi.Volume{ID: "v", CapacityBytes: 1 << 20})
	ctx := context.Background()
	capab := csi.VolumeCapability{
		Capability:   spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"echo-flag"}},
	}
	staging := t.TempDir()
	if _, err := c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: "v", NodeID: "mem-node-1",
		Capability: capab, Secrets: spec.Secrets{"k": "echo-secret"}}); err != nil {
		t.Fatal(err)
	}
	f.FailOnce(csi.RPCNodeUnstageVolume, codes.Internal)
	err := c.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: "v", StagingPath: staging})
	if err == nil || strings.Contains(err.Error(), "echo-secret") {
		t.Fatalf("before Echo: %v, want an error without the echo", err)
	}
	f.Echo()
	f.FailOnce(csi.RPCNodeUnstageVolume, codes.Internal)
	err = c.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: "v", StagingPath: staging})
	if err == nil || !strings.Contains(err.Error(), "(echo: ") || !strings.Contains(err.Error(), "echo-flag") || !strings.Contains(err.Error(), "echo-secret") {
		t.Errorf("injected fault with Echo: %v, want the secret and the flag echoed", err)
	}
	// The plugin's own error (publish before stage) echoes too.
	err = c.NodePublishVolume(ctx, csi.NodePublishVolumeRequest{VolumeID: "v", StagingPath: staging,
		TargetPath: staging + "/t", Capability: capab})
	if csi.CodeOf(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "echo-secret") {
		t.Errorf("the plugin's own error with Echo: %v, want FailedPrecondition with the secret echoed", err)
	}
	if got := f.Seen(); len(got) != 2 {
		t.Errorf("Seen = %q, want the flag and the secret once each", got)
	}
	// EchoEncoded: each value, then each of its encodings.
	f.EchoEncoded(strings.ToUpper, strings.ToTitle)
	f.FailOnce(csi.RPCNodeUnstageVolume, codes.Internal)
	err = c.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: "v", StagingPath: staging})
	if err == nil || !strings.Contains(err.Error(), "echo-secret ECHO-SECRET ECHO-SECRET") || !strings.Contains(err.Error(), "echo-flag ECHO-FLAG ECHO-FLAG") {
		t.Errorf("injected fault with EchoEncoded: %v, want the secret and the flag echoed as they are, then encoded", err)
	}
}

// A fault with When applies to the calls whose request it accepts; the others go through and
// do not use up its Times.
func TestFaultWhenAppliesToTheRequestsItAccepts(t *testing.T) {
	f := csitest.NewFaults()
	_, c := serve(t, f, csi.Timeouts{Short: 5 * time.Second, Long: 5 * time.Second})
	f.Inject(csi.RPCListSnapshots, csitest.Fault{Code: codes.Aborted, Times: 1, When: func(m proto.Message) bool {
		return m.(*csipb.ListSnapshotsRequest).GetSnapshotId() == "w"
	}})
	for i, tc := range []struct {
		id   string
		want codes.Code
	}{{"v", codes.OK}, {"v", codes.OK}, {"w", codes.Aborted}, {"w", codes.OK}} {
		_, err := c.ListSnapshots(context.Background(), csi.ListSnapshotsRequest{SnapshotID: tc.id})
		if got := csi.CodeOf(err); got != tc.want {
			t.Errorf("call %d (snapshot %q): %v, want %s", i+1, tc.id, err, tc.want)
		}
	}
}
