package engine

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
)

// A create from a snapshot checks the snapshot is ready (restoreReady); a plugin refusing the
// check's ListSnapshots UNAUTHENTICATED gets a warning, and the restore goes on. The warning
// carried ListSnapshots' hint, "pass the ones it needs with --secret KEY=VALUE", a flag volume
// create does not have (review31c's lead): it names the volume spec's secrets, which the check
// sends.
func TestRestoreCheckRefusedCredentialsNamesTheSpecsSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	var logs bytes.Buffer
	h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	h.create(volume("db"))
	h.snapshot("nightly")
	snaps, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil || len(snaps.Snapshots) != 1 {
		t.Fatalf("snapshots: %+v, %v", snaps, err)
	}
	h.faults.FailAlways(csi.RPCListSnapshots, codes.Unauthenticated)
	sv := volume("restored")
	sv.SnapshotID = snaps.Snapshots[0].ID
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("restore with the check refused: %v", err)
	}
	log := logs.String()
	if !strings.Contains(log, "could not be checked") {
		t.Fatalf("no warning of the check refused: %q", log)
	}
	if strings.Contains(log, "--secret") {
		t.Errorf("the restore's warning advises --secret, which volume create does not take: %q", log)
	}
	if !strings.Contains(log, "secrets block") {
		t.Errorf("the restore's warning does not name the spec's secrets: %q", log)
	}
}
