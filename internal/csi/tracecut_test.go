package csi_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestVerboseTraceCutsAHugeAnswerAfterItsScrub: a plugin answering CreateVolume with a volume
// context of more than a megabyte, the request's secret echoed in it a few thousand times
// around where a cut would fall. The trace (`--verbose`) wrote the answer whole, at every
// call, secret included for a log without the engine's redaction; it now writes at most
// MaxTraceAnswer of it, cut after the secrets are scrubbed, so no part of one is left at the
// cut for the log's own redaction to miss.
func TestVerboseTraceCutsAHugeAnswerAfterItsScrub(t *testing.T) {
	var trace iostreams.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{Logger: logger}))
	huge := strings.Repeat("x", csi.MaxTraceAnswer-5000) + strings.Repeat(sentinelSecret, 2000) + strings.Repeat("y", 1<<20)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: func(resp proto.Message) {
		resp.(*csipb.CreateVolumeResponse).Volume.VolumeContext = map[string]string{"k": huge}
	}})
	vc := sensitiveCapability()
	// The client refuses a context past what volctl takes (16 KiB); the trace is written first.
	_, _ = h.client.CreateVolume(context.Background(), csi.CreateVolumeRequest{Name: "s", Capabilities: []csi.VolumeCapability{vc},
		Secrets: spec.Secrets{"password": sentinelSecret}})
	out := trace.String()
	if !strings.Contains(out, "rpc=CreateVolume") {
		t.Fatalf("no trace of CreateVolume:\n%.2000s", out)
	}
	if len(out) > 2*csi.MaxTraceAnswer {
		t.Errorf("the trace of one answer is %d bytes, want at most about %d (MaxTraceAnswer)", len(out), csi.MaxTraceAnswer)
	}
	if !strings.Contains(out, "bytes more)") {
		t.Errorf("the trace does not say how much of the answer it left out:\n%.300s", out[max(0, len(out)-300):])
	}
	if strings.Contains(out, sentinelSecret) {
		t.Errorf("the trace holds the secret the plugin echoed")
	}
	for k := 3; k < len(sentinelSecret); k++ {
		if strings.Contains(out, sentinelSecret[:k]+"…") {
			t.Errorf("the trace was cut inside an echoed secret, its first %d bytes left: %q", k, sentinelSecret[:k])
		}
	}
}
