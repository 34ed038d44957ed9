package csi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// wantClass is the table of docs/architecture.md (Error classes), written out independently of the code under test.
func wantClass(rpc string, code codes.Code) csi.Class {
	switch code {
	case codes.ResourceExhausted:
		switch rpc { // the CSI spec's tables: not to be sent again as it is
		case "ControllerPublishVolume", "CreateVolume", "CreateSnapshot":
			return csi.Final
		}
		return csi.Retryable
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return csi.Retryable
	case codes.NotFound:
		switch rpc {
		case "NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume", "DeleteVolume", "DeleteSnapshot":
			return csi.Ignorable
		}
	}
	return csi.Final
}

// TestErrorClassesForEveryRPCAndCode injects every gRPC error code into every RPC over a real
// socket and checks the translated error: type, RPC, code, class, message, hint and helpers.
func TestErrorClassesForEveryRPCAndCode(t *testing.T) {
	w := newWorld(t)
	calls := w.calls()
	for _, rpc := range csi.RPCs {
		for code := codes.Canceled; code <= codes.Unauthenticated; code++ {
			w.faults.Inject(rpc, csitest.Fault{Code: code, Message: "boom " + code.String(), Times: 1})
			err := calls[rpc](context.Background())
			var e *csi.Error
			if !errors.As(err, &e) {
				t.Fatalf("%s/%v: error %v (%T) is not a *csi.Error", rpc, code, err, err)
			}
			want := wantClass(rpc, code)
			if e.RPC != rpc || e.Code != code || e.Class != want || e.Message != "boom "+code.String() {
				t.Errorf("%s/%v: got %s %v %v %q, want class %v", rpc, code, e.RPC, e.Code, e.Class, e.Message, want)
			}
			if e.Hint == "" {
				t.Errorf("%s/%v: no hint", rpc, code)
			}
			wrapped := fmt.Errorf("claim %q: %w", "db", err)
			if csi.ClassOf(wrapped) != want || csi.CodeOf(wrapped) != code || status.Code(wrapped) != code ||
				csi.IsRetryable(wrapped) != (want == csi.Retryable) || csi.IsIgnorable(wrapped) != (want == csi.Ignorable) {
				t.Errorf("%s/%v: helpers disagree through wrapping: class %v code %v", rpc, code, csi.ClassOf(wrapped), csi.CodeOf(wrapped))
			}
			if prefix := rpc + ": " + code.String() + ": boom " + code.String() + " ("; !strings.HasPrefix(err.Error(), prefix) || !strings.HasSuffix(err.Error(), ")") {
				t.Errorf("%s/%v: Error() = %q, want %q...(hint)", rpc, code, err, prefix)
			}
		}
	}
}

func TestHints(t *testing.T) {
	tests := []struct {
		rpc  string
		code codes.Code
		want string
	}{
		{csi.RPCNodePublishVolume, codes.FailedPrecondition, "the volume may be published elsewhere with an incompatible mode"},
		{csi.RPCControllerPublishVolume, codes.ResourceExhausted, "the node reached its max volumes"},
		{csi.RPCControllerPublishVolume, codes.ResourceExhausted, "or the plugin has no room to record the attachment"},
		// A copy (a snapshot, a clone) that fills the plugin's storage: what to free, not only
		// a topology to relax.
		{csi.RPCCreateVolume, codes.ResourceExhausted, "free space on the plugin's storage (delete volumes or snapshots no longer needed; its message says where)"},
		{csi.RPCCreateSnapshot, codes.ResourceExhausted, "free space on the plugin's storage (delete snapshots or volumes no longer needed; its message says where)"},
		{csi.RPCControllerPublishVolume, codes.FailedPrecondition, "release the other claim first"},
		{csi.RPCCreateVolume, codes.AlreadyExists, "a volume with this name exists with incompatible parameters"},
		{csi.RPCCreateVolume, codes.OutOfRange, "requested capacity outside the plugin's supported range"},
		{csi.RPCCreateVolume, codes.NotFound, "snapshot or clone source does not exist"},
		{csi.RPCControllerExpandVolume, codes.OutOfRange, "requested size outside the plugin's supported range"},
		{csi.RPCNodeExpandVolume, codes.OutOfRange, "requested size outside the plugin's supported range"},
		{csi.RPCNodeExpandVolume, codes.NotFound, "neither staged nor published at that path on this node"},
		{csi.RPCNodeStageVolume, codes.Unimplemented, "the plugin does not implement NodeStageVolume; check its capabilities"},
		{csi.RPCDeleteVolume, codes.FailedPrecondition, "in use or has snapshots"},
		{csi.RPCListVolumes, codes.Aborted, "list again from the start"},
		{csi.RPCNodeUnpublishVolume, codes.NotFound, "already gone"},
		{csi.RPCNodePublishVolume, codes.Unauthenticated, "check the volume's secrets"},
		{csi.RPCNodeStageVolume, codes.Internal, "check its logs"},
		{csi.RPCProbe, codes.FailedPrecondition, "unhealthy"},
	}
	w := newWorld(t)
	calls := w.calls()
	for _, tt := range tests {
		t.Run(tt.rpc+"/"+tt.code.String(), func(t *testing.T) {
			w.faults.FailOnce(tt.rpc, tt.code)
			err := calls[tt.rpc](context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want hint %q", err, tt.want)
			}
		})
	}
}

func TestUnavailableNamesTheSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "csie")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)

	missing := filepath.Join(dir, "missing.sock")
	regular := filepath.Join(dir, "regular.sock")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A stale socket: the file is there, nobody listens.
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	tests := []struct {
		name, socket, want string
	}{
		{"missing", missing, "GetPluginInfo: Unavailable: plugin socket " + missing + " does not exist (is the plugin running?)"},
		{"not a socket", regular, "GetPluginInfo: Unavailable: plugin socket " + regular + " is a regular file, not a socket (check the plugin's socket path)"},
		{"stale", stale, "GetPluginInfo: Unavailable: nothing is listening on plugin socket " + stale + " (is the plugin running? the socket file may be left over from one that died)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := csitest.NewClient(t, csi.Config{ControllerSocket: tt.socket, NodeSocket: tt.socket})
			_, err = c.GetPluginInfo(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("GetPluginInfo = %v, want %q", err, tt.want)
			}
			if !csi.IsRetryable(err) {
				t.Fatalf("an unreachable plugin should be retryable: %v", err)
			}
			if !csi.IsUnreachable(err) {
				t.Fatalf("IsUnreachable(%v) = false for a socket nobody answers on", err)
			}
			if strings.Contains(err.Error(), "transport: ") {
				t.Fatalf("raw gRPC transport error leaked: %v", err)
			}
		})
	}
}

// TestUnavailableAnsweredByThePluginIsNotUnreachable: gRPC gives UNAVAILABLE both for a plugin
// it cannot reach and for one that answers UNAVAILABLE itself (its storage backend out of
// reach). The second is running: its error must not ask whether it is running and listening
// (it said "is the plugin running and listening on ...?"), and csi.IsUnreachable, on which a
// claim's probe decides whether to judge the plugin's health, is false for it, whatever words
// the plugin chose (gRPC's own for a lost connection among them). A connection lost mid-call,
// the plugin stopped while it held the RPC, is unreachable still.
func TestUnavailableAnsweredByThePluginIsNotUnreachable(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	for _, msg := range []string{"ceph cluster unreachable: connection refused", "error reading from server: EOF", "connection error: desc = \"transport is closing\""} {
		h.faults.Inject(csi.RPCProbe, csitest.Fault{Code: codes.Unavailable, Message: msg, Times: 1})
		_, err := h.client.Probe(context.Background())
		if !csi.IsUnavailable(err) || csi.IsUnreachable(err) {
			t.Errorf("Probe answered UNAVAILABLE %q by the plugin: IsUnavailable %v, IsUnreachable %v (%v); want true, false", msg, csi.IsUnavailable(err), csi.IsUnreachable(err), err)
		}
		if !csi.IsRetryable(err) {
			t.Errorf("the plugin's own UNAVAILABLE is not retryable: %v", err)
		}
		if text := fmt.Sprint(err); strings.Contains(text, "listening") || !strings.Contains(text, "is running and answered UNAVAILABLE itself") || !strings.Contains(text, msg) {
			t.Errorf("Probe answered UNAVAILABLE %q by the plugin: %v; want its message and a hint saying it is running and answered so, not one asking whether it listens", msg, err)
		}
	}

	// The plugin stops while it holds a NodeStageVolume: no answer came.
	h.faults.Hang(csi.RPCNodeStageVolume)
	done := make(chan error, 1)
	go func() {
		done <- h.client.NodeStageVolume(context.Background(), csi.NodeStageVolumeRequest{VolumeID: "v", StagingPath: "/s", Capability: fsWriter})
	}()
	for h.faults.Held() == 0 {
		time.Sleep(time.Millisecond)
	}
	h.stop()
	err := <-done
	if !csi.IsUnreachable(err) {
		t.Errorf("NodeStageVolume whose plugin stopped mid-call: %v (IsUnreachable false); want an UNAVAILABLE no plugin answered", err)
	}
	if strings.Contains(fmt.Sprint(err), "answered UNAVAILABLE itself") {
		t.Errorf("NodeStageVolume whose plugin stopped mid-call says the plugin answered: %v", err)
	}
}

// TestHangHitsTheClientTimeout: a hung plugin runs into our own timeout, which comes back as
// a retryable DeadlineExceeded with a hint naming the timeout.
func TestHangHitsTheClientTimeout(t *testing.T) {
	// The long timeout, the hung NodeStageVolume's, leaves the call time to reach the plugin on a
	// loaded machine: at 30ms, a -race run under load timed it out before the plugin got it, and
	// the plugin counted no hung call.
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{Timeouts: csi.Timeouts{Short: 20 * time.Millisecond, Long: 2 * time.Second}}))
	// Connect first: on a loaded machine, dialling within the timeout could time the RPC out
	// before it reaches the plugin, and the plugin would then count no hung call.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := h.client.Probe(context.Background()); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Probe before the hang: %v", err)
		}
	}
	h.faults.Hang(csi.RPCNodeStageVolume)
	h.faults.Hang(csi.RPCNodeGetInfo)
	err := h.client.NodeStageVolume(context.Background(), csi.NodeStageVolumeRequest{VolumeID: "v", StagingPath: "/s", Capability: fsWriter})
	if csi.CodeOf(err) != codes.DeadlineExceeded || !csi.IsRetryable(err) {
		t.Fatalf("NodeStageVolume = %v, want a retryable DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "did not answer within 2s; it may still be working: run `volctl reconcile` later") {
		t.Fatalf("NodeStageVolume error %q lacks the timeout hint", err)
	}
	_, err = h.client.NodeGetInfo(context.Background())
	if csi.CodeOf(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "within 20ms") {
		t.Fatalf("NodeGetInfo = %v, want DeadlineExceeded after the short timeout", err)
	}
	waitCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.faults.WaitIdle(waitCtx); err != nil {
		t.Fatal(err)
	}
	if n := h.faults.Failed(csi.RPCNodeStageVolume); n != 1 {
		t.Fatalf("Faults counted %d failed NodeStageVolume calls, want 1", n)
	}
}

// TestCallerCancellationIsNotRetryable: when our caller gives up, the context error comes back
// as is; it is not the plugin's failure and must not be retried on the caller's behalf.
func TestCallerCancellationIsNotRetryable(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	h.faults.Hang(csi.RPCNodePublishVolume)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.client.NodePublishVolume(ctx, csi.NodePublishVolumeRequest{VolumeID: "v", TargetPath: "/t", Capability: fsWriter})
	}()
	// Cancel once the call is in the plugin.
	for h.faults.Calls(csi.RPCNodePublishVolume) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	err := <-done
	var e *csi.Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &e) || csi.IsRetryable(err) {
		t.Fatalf("NodePublishVolume = %v (%T), want the caller's context.Canceled, not retryable", err, err)
	}
	if !strings.HasPrefix(err.Error(), "NodePublishVolume: ") {
		t.Fatalf("error %q does not name the RPC", err)
	}

	// The caller's own deadline is the caller's business too.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = h.client.NodePublishVolume(ctx, csi.NodePublishVolumeRequest{VolumeID: "v", TargetPath: "/t", Capability: fsWriter})
	if !errors.Is(err, context.DeadlineExceeded) || csi.IsRetryable(err) {
		t.Fatalf("NodePublishVolume past the caller's deadline = %v, want context.DeadlineExceeded", err)
	}

	// But a plugin that itself answers CANCELLED is retryable.
	h.faults.Clear()
	h.faults.FailOnce(csi.RPCNodePublishVolume, codes.Canceled)
	err = h.client.NodePublishVolume(context.Background(), csi.NodePublishVolumeRequest{VolumeID: "v", TargetPath: "/t", Capability: fsWriter})
	if !csi.IsRetryable(err) || csi.CodeOf(err) != codes.Canceled {
		t.Fatalf("plugin-side Canceled = %v, want retryable", err)
	}
}

func TestCodeOfAndClassOfOnOtherErrors(t *testing.T) {
	tests := []struct {
		err   error
		code  codes.Code
		class csi.Class
	}{
		{nil, codes.OK, csi.Final},
		{errors.New("plain"), codes.Unknown, csi.Final},
		{fmt.Errorf("x: %w", context.Canceled), codes.Canceled, csi.Final},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), codes.DeadlineExceeded, csi.Final},
		{status.Error(codes.Aborted, "raw"), codes.Aborted, csi.Final},
	}
	for _, tt := range tests {
		if got := csi.CodeOf(tt.err); got != tt.code {
			t.Errorf("CodeOf(%v) = %v, want %v", tt.err, got, tt.code)
		}
		if got := csi.ClassOf(tt.err); got != tt.class {
			t.Errorf("ClassOf(%v) = %v, want %v", tt.err, got, tt.class)
		}
	}
	if csi.IsRetryable(nil) || csi.IsIgnorable(nil) {
		t.Error("nil is neither retryable nor ignorable")
	}
	for c, s := range map[csi.Class]string{csi.Final: "final", csi.Retryable: "retryable", csi.Ignorable: "ignorable"} {
		if c.String() != s {
			t.Errorf("%d.String() = %q, want %q", c, c.String(), s)
		}
	}
	e := &csi.Error{RPC: "NodePublishVolume", Code: codes.FailedPrecondition}
	if e.Error() != "NodePublishVolume: FailedPrecondition" {
		t.Errorf("Error() without message or hint = %q", e.Error())
	}
}

// TestMessageOverGRPCLimitIsFinal: a response over gRPC's 4 MiB message limit comes back as
// RESOURCE_EXHAUSTED "grpc: received message larger than max". That is not the plugin out of
// a resource (for ControllerPublishVolume, "the node reached its max volumes"), and a retry
// gets the same answer: it is final and says what happened. A request over the plugin's limit
// says that instead.
func TestMessageOverGRPCLimitIsFinal(t *testing.T) {
	huge := strings.Repeat("x", 5<<20)
	cfg := csitest.DefaultMemConfig()
	cfg.PublishContext = map[string]string{"device": huge}
	h := newHarness(t, cfg)
	h.mem.AddVolume(csi.Volume{ID: "vol-1", CapacityBytes: 1 << 30})
	_, err := h.client.ControllerPublishVolume(context.Background(), csi.ControllerPublishVolumeRequest{
		VolumeID: "vol-1", NodeID: "mem-node-1", Capability: sensitiveCapability()})
	var e *csi.Error
	if !errors.As(err, &e) {
		t.Fatalf("ControllerPublishVolume with a 5 MiB publish_context: %v, want a *csi.Error", err)
	}
	if e.Code != codes.ResourceExhausted || e.Class != csi.Final || csi.IsRetryable(err) {
		t.Errorf("code %s class %s, want ResourceExhausted and final: %v", e.Code, e.Class, err)
	}
	for _, want := range []string{"the plugin answered with a message of ", "over the 4194304-byte limit of a gRPC message",
		"publish_context", "a retry gets the same answer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "max volumes") {
		t.Errorf("error blames the node's max volumes: %v", err)
	}

	// volctl's own request over the plugin's limit.
	_, err = h.client.CreateVolume(context.Background(), csi.CreateVolumeRequest{Name: "big",
		Capabilities: []csi.VolumeCapability{sensitiveCapability()}, Parameters: map[string]string{"p": huge}})
	if csi.ClassOf(err) != csi.Final || !strings.Contains(fmt.Sprint(err), "volctl's request is ") ||
		!strings.Contains(fmt.Sprint(err), "make them smaller") {
		t.Errorf("CreateVolume with 5 MiB of parameters: %v (class %s), want a final error about the request's size", err, csi.ClassOf(err))
	}
	// The plugin's own RESOURCE_EXHAUSTED stays what it is, with its hint: retryable (a quota
	// or rate that may pass), and final for ControllerPublishVolume, the node's "max volumes
	// attached", which the CSI spec says is not to be sent again before volumes are detached.
	h.faults.FailOnce(csi.RPCNodeStageVolume, codes.ResourceExhausted)
	err = h.client.NodeStageVolume(context.Background(), csi.NodeStageVolumeRequest{VolumeID: "vol-1", StagingPath: "/s", Capability: sensitiveCapability()})
	if !csi.IsRetryable(err) || !strings.Contains(fmt.Sprint(err), "ran out of a resource") || strings.Contains(fmt.Sprint(err), "message larger") {
		t.Errorf("the plugin's own ResourceExhausted to NodeStageVolume: %v, want retryable with its hint", err)
	}
	h.faults.FailOnce(csi.RPCControllerPublishVolume, codes.ResourceExhausted)
	_, err = h.client.ControllerPublishVolume(context.Background(), csi.ControllerPublishVolumeRequest{
		VolumeID: "vol-1", NodeID: "mem-node-1", Capability: sensitiveCapability()})
	if csi.ClassOf(err) != csi.Final || !strings.Contains(fmt.Sprint(err), "max volumes") || strings.Contains(fmt.Sprint(err), "message larger") {
		t.Errorf("the plugin's own ResourceExhausted to ControllerPublishVolume: %v, want final with the max volumes hint", err)
	}
}

// TestTimeoutFlag: an RPC cut off by volctl's own per-RPC timeout is marked on the error
// (csi.IsTimeout), so the engine tells it from a DEADLINE_EXCEEDED the plugin returned itself
// without recomputing the client's deadline.
func TestTimeoutFlag(t *testing.T) {
	// Only the hung NodeStageVolume (a long RPC) is to run into the client's timeout. The short
	// RPCs after it (NodeGetInfo, Probe) answer at once with the code the test injects, and their
	// timeout is beyond anything load can reach: at 20 ms, a loaded machine timed NodeGetInfo out
	// before the plugin's own DEADLINE_EXCEEDED came back, and the test read volctl's timeout.
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{Timeouts: csi.Timeouts{Short: 30 * time.Second, Long: 30 * time.Millisecond}}))
	h.faults.Hang(csi.RPCNodeStageVolume)
	err := h.client.NodeStageVolume(context.Background(), csi.NodeStageVolumeRequest{VolumeID: "v", StagingPath: "/s", Capability: fsWriter})
	if !csi.IsTimeout(err) {
		t.Fatalf("NodeStageVolume cut off by the client's timeout = %v: IsTimeout is false", err)
	}
	h.faults.FailAlways(csi.RPCNodeGetInfo, codes.DeadlineExceeded)
	_, err = h.client.NodeGetInfo(context.Background())
	if csi.CodeOf(err) != codes.DeadlineExceeded || csi.IsTimeout(err) {
		t.Fatalf("NodeGetInfo answered DEADLINE_EXCEEDED by the plugin = %v (IsTimeout %v), want the plugin's own, not a timeout", err, csi.IsTimeout(err))
	}
	// Its hint does not say the plugin did not answer within the timeout: it answered at once.
	if msg := err.Error(); strings.Contains(msg, "did not answer within") || !strings.Contains(msg, "reported a timeout of its own") {
		t.Errorf("NodeGetInfo answered DEADLINE_EXCEEDED by the plugin: %v; want a hint saying the plugin reported a timeout of its own", err)
	}
	for _, tt := range []struct {
		name string
		is   func(error) bool
		code codes.Code
	}{
		{"IsUnavailable", csi.IsUnavailable, codes.Unavailable},
		{"IsAlreadyExists", csi.IsAlreadyExists, codes.AlreadyExists},
		{"IsFailedPrecondition", csi.IsFailedPrecondition, codes.FailedPrecondition},
	} {
		h.faults.FailOnce(csi.RPCProbe, tt.code)
		_, err := h.client.Probe(context.Background())
		if !tt.is(err) {
			t.Errorf("%s(%v) = false", tt.name, err)
		}
		if tt.is(nil) || tt.is(errors.New("other")) {
			t.Errorf("%s is true for nil or a plain error", tt.name)
		}
	}
}

// TestUnavailableQuotesASocketNamedWithAControlCharacter: a socket path holding a newline or an
// escape (a directory name may) is quoted in the error, the character written out: printed raw,
// the rest of the path read as a line of its own ("b.sock does not exist ..."), and an escape
// sequence recoloured the terminal.
func TestUnavailableQuotesASocketNamedWithAControlCharacter(t *testing.T) {
	dir, err := os.MkdirTemp("", "csie")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{"a\nb.sock", "a\x1b[31mb.sock"} {
		socket := filepath.Join(dir, name)
		c := csitest.NewClient(t, csi.Config{ControllerSocket: socket, NodeSocket: socket})
		_, err = c.GetPluginInfo(context.Background())
		want := "plugin socket " + strconv.Quote(socket) + " does not exist (is the plugin running?)"
		if err == nil || !strings.Contains(err.Error(), want) || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("GetPluginInfo = %q, want %q and no raw control character", err, want)
		}
	}
}
