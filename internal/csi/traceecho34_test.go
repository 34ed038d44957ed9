package csi_test

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestVerboseTraceScrubsSecretsEchoedInAnswers: a hostile plugin answers OK, with the secret
// the request carried echoed into its answer's fields (a volume_context, a publish_context, a
// confirmed context, snapshot IDs), as it is and base64-encoded. The trace (--verbose, the
// agent's debug log) writes every answer: the secret is scrubbed from it, as from the plugin's
// error messages. A secret the state does not hold yet (a register's spec, `snapshot list
// --secret`) has no log redaction after the trace to catch it: before, the trace wrote it
// whole for every answer under 64 KiB, which only the cut of a larger one scrubbed.
func TestVerboseTraceScrubsSecretsEchoedInAnswers(t *testing.T) {
	t.Parallel()
	var trace iostreams.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelDebug}))
	echo := func(req any) string {
		var s map[string]string
		switch r := req.(type) {
		case *csipb.CreateVolumeRequest:
			s = r.GetSecrets()
		case *csipb.ValidateVolumeCapabilitiesRequest:
			s = r.GetSecrets()
		case *csipb.ControllerPublishVolumeRequest:
			s = r.GetSecrets()
		case *csipb.CreateSnapshotRequest:
			s = r.GetSecrets()
		case *csipb.ListSnapshotsRequest:
			s = r.GetSecrets()
		}
		return s["password"] + " " + base64.StdEncoding.EncodeToString([]byte(s["password"]))
	}
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{Logger: logger}),
		withOverride(csi.RPCCreateVolume, func(req any) (any, error) {
			return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: "vol-s", VolumeContext: map[string]string{"echo": echo(req)}}}, nil
		}),
		withOverride(csi.RPCValidateVolumeCapabilities, func(req any) (any, error) {
			r := req.(*csipb.ValidateVolumeCapabilitiesRequest)
			return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
				VolumeCapabilities: r.GetVolumeCapabilities(), VolumeContext: map[string]string{"echo": echo(req)}}}, nil
		}),
		withOverride(csi.RPCControllerPublishVolume, func(req any) (any, error) {
			return &csipb.ControllerPublishVolumeResponse{PublishContext: map[string]string{"echo": echo(req)}}, nil
		}),
		withOverride(csi.RPCCreateSnapshot, func(req any) (any, error) {
			return &csipb.CreateSnapshotResponse{Snapshot: &csipb.Snapshot{SnapshotId: "snap-1", SourceVolumeId: "vol-1",
				GroupSnapshotId: echo(req)}}, nil
		}),
		withOverride(csi.RPCListSnapshots, func(req any) (any, error) {
			return &csipb.ListSnapshotsResponse{Entries: []*csipb.ListSnapshotsResponse_Entry{{Snapshot: &csipb.Snapshot{
				SnapshotId: "snap-" + echo(req), SourceVolumeId: "vol-1"}}}}, nil
		}))
	h.mem.AddVolume(csi.Volume{ID: "vol-1", CapacityBytes: 1 << 30})
	ctx := context.Background()
	calls := sensitiveCalls(h.client, t.TempDir())
	for _, rpc := range []string{csi.RPCCreateVolume, csi.RPCValidateVolumeCapabilities, csi.RPCControllerPublishVolume,
		csi.RPCCreateSnapshot, csi.RPCListSnapshots} {
		if err := calls[rpc](ctx); err != nil {
			// A confirmed context with more in it than was sent is no confirmation
			// (TestConfirmedParametersAndContextAreComparedWithWhatWasSent): its answer's trace
			// is checked below all the same, and the refusal names keys, not values.
			if rpc != csi.RPCValidateVolumeCapabilities || !errors.Is(err, csi.ErrNotConfirmed) || strings.Contains(err.Error(), sentinelSecret) {
				t.Fatalf("%s: %v", rpc, err)
			}
		}
	}
	out := trace.String()
	encoded := base64.StdEncoding.EncodeToString([]byte(sentinelSecret))
	for _, rpc := range []string{csi.RPCCreateVolume, csi.RPCValidateVolumeCapabilities, csi.RPCControllerPublishVolume,
		csi.RPCCreateSnapshot, csi.RPCListSnapshots} {
		if !strings.Contains(out, "rpc="+rpc) {
			t.Errorf("the trace has no %s: the test tests nothing there\n%s", rpc, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, sentinelSecret) || strings.Contains(line, encoded) {
			t.Errorf("the trace shows the secret a plugin echoed in its answer:\n%s", line)
		}
	}
	if !strings.Contains(out, "echo") || !strings.Contains(out, spec.Redacted) {
		t.Errorf("the trace does not show the answers' echoed fields redacted: the test tests nothing\n%s", out)
	}
}
