package engine

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// lockedBuffer is a log written by the engine's goroutines and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRegisterTraceShowsNoSecretThePluginEchoesInItsAnswer: `volume register` sends the spec's
// secrets in ValidateVolumeCapabilities before the volume is recorded, and a hostile plugin
// answers OK, confirming, with the secret echoed into the confirmed volume_context. The
// engine's debug log (--verbose, the agent's VOLCTL_LOG=debug) traces the answer: its log's
// redaction knows only what the state holds, which is not this secret yet. Before, the trace
// wrote it whole; the client scrubs an answer of its request's secrets as it does an error.
func TestRegisterTraceShowsNoSecretThePluginEchoesInItsAnswer(t *testing.T) {
	t.Parallel()
	const secret = "regtrace-s3cret-5e1a"
	echo := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.ValidateVolumeCapabilitiesResponse); ok && err == nil && r.GetConfirmed() != nil {
			r.Confirmed.VolumeContext = map[string]string{"echo": req.(*csipb.ValidateVolumeCapabilitiesRequest).GetSecrets()["token"]}
		}
		return resp, err
	}
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	socket, _ := csitest.Serve(t, csitest.WithServer(mem), csitest.WithInterceptor(echo))
	var logs lockedBuffer
	h := newHarnessConfig(t, nil, Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	h.registerPlugin("echo", socket)
	v := registered("v", "ext-1")
	v.PluginID = "echo"
	v.Secrets = spec.Secrets{"token": secret}
	// Another volume_context confirmed than was sent is no confirmation
	// (TestConfirmedParametersAndContextAreComparedWithWhatWasSent): the register is refused,
	// naming the key, not the value; the answer is traced all the same.
	if _, err := h.e.RegisterVolume(h.ctx, v); !errors.Is(err, csi.ErrNotConfirmed) || strings.Contains(err.Error(), secret) {
		t.Fatalf("register with the plugin confirming another context: %v; want it not confirmed, the secret unnamed", err)
	}
	out := logs.String()
	if !strings.Contains(out, "rpc=ValidateVolumeCapabilities") || !strings.Contains(out, "echo") {
		t.Fatalf("the log traces no ValidateVolumeCapabilities answer with the echo: the test tests nothing\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, secret) {
			t.Errorf("the engine's log shows the secret the plugin echoed in its answer:\n%s", line)
		}
	}
}

// TestControllerUnpublishCheckedByGetVolumeAnsweringNoVolume: the adversary answers
// ControllerUnpublishVolume OK, keeps the attachment, and answers the check's
// ControllerGetVolume OK with an empty answer (no volume, no status), a default response where
// CSI requires the volume. Before, that read as the volume published nowhere, the detach
// checked, silently; it says nothing of the volume asked, as an answer about another volume
// does not: the check is said not made (a warning naming the volume).
func TestControllerUnpublishCheckedByGetVolumeAnsweringNoVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, getVolumeOnly)
	var logs lockedBuffer
	h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	ext := h.externalID("v")
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = true })
	h.faults.Inject(csi.RPCControllerGetVolume, csitest.Fault{Answer: func(m proto.Message) {
		resp := m.(*csipb.ControllerGetVolumeResponse)
		resp.Volume, resp.Status = nil, nil
	}})
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if h.faults.Calls(csi.RPCControllerGetVolume) == 0 {
		t.Fatal("the release sent no ControllerGetVolume: the test tests nothing")
	}
	if out := logs.String(); !strings.Contains(out, "could not be checked") || !strings.Contains(out, "no volume") || !strings.Contains(out, ext) {
		t.Fatalf("release checked by a ControllerGetVolume answering no volume; logs:\n%s\nwant a warning that the check could not be made, naming %s", out, ext)
	}
}
