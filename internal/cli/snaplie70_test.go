package cli

import (
	"maps"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestSnapshotCreateReplayedWithOtherParametersSaysSo: `snapshot create a nightly --parameter
// tier=cold` is cut short (the plugin unavailable: it
// made nothing), leaving the create pending. The user runs it again with --parameter tier=hot.
// The engine replays the pending request (createSnapshotStored: intent.Parameters =
// old.Parameters), so CreateSnapshot was sent then with tier=cold, and the command said
// "created", nothing about the --parameter it did not apply. The doc makes the command say so
// for a create of a NAME answered with the snapshot it made before ("and that a --parameter it
// was not taken with was not applied"), and a volume create replayed with other settings is a
// conflict saying so; here the snapshot was taken, with parameters the user did not ask for
// this time, in silence. It is refused now, a conflict naming both.
// Found by helper review70.
func TestSnapshotCreateReplayedWithOtherParametersSaysSo(t *testing.T) {
	h, faults, mem := newHeldCLIHarness(t)
	h.createVolume(t, "a", spec.SingleNodeWriter)
	faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Code: codes.Unavailable})
	code, out, errOut := h.runReported("volume", "snapshot", "create", "a", "nightly", "--parameter", "tier=cold")
	if code == 0 {
		t.Fatalf("premise: the create the plugin never answered exited 0: %q %q", out, errOut)
	}
	faults.Clear(csi.RPCCreateSnapshot)
	if n := len(mem.Snapshots()); n != 0 {
		t.Fatalf("premise: the plugin holds %d snapshots after the unanswered create", n)
	}
	code, out, errOut = h.runReported("volume", "snapshot", "create", "a", "nightly", "--parameter", "tier=hot")
	var sent map[string]string
	for _, c := range mem.Calls() {
		if r, ok := c.Request.(csi.CreateSnapshotRequest); ok && c.Code == codes.OK {
			sent = r.Parameters
		}
	}
	t.Logf("exit %d\nstdout: %sstderr: %s\nCreateSnapshot answered OK was sent parameters %v", code, out, errOut, sent)
	want := map[string]string{"tier": "hot"}
	if code != 0 && (code != ExitConflict || !strings.Contains(errOut, `"tier"="cold"`) || !strings.Contains(errOut, `"tier"="hot"`)) {
		t.Errorf("the create again refused (exit %d), not as a conflict naming both parameters: %s", code, errOut)
	}
	if code == 0 && !maps.Equal(sent, want) && !strings.Contains(out+errOut, "--parameter") {
		t.Errorf("`snapshot create a nightly --parameter tier=hot` took the snapshot now with parameters %v and exited 0 saying %q: "+
			"nothing says the --parameter given was not applied", sent, strings.TrimSpace(out))
	}
}
