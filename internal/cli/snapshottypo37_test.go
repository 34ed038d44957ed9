package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestSnapshotDeleteOfATypoSaysNothingWasDeleted: `volctl volume snapshot delete mem nightyl
// --yes` for the snapshot named "nightly". Before, it printed `Snapshot "nightyl" of plugin
// "mem" deleted`, exit 0, the snapshot still there: the plugin had answered OK for an ID it
// does not have. Now it says nothing was deleted and names the snapshot likely meant, exit 0
// (nothing to delete is done, as a release of a claim that is not there); the delete by the
// right name still deletes.
func TestSnapshotDeleteOfATypoSaysNothingWasDeleted(t *testing.T) {
	t.Parallel()
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := h.runReported("volume", "snapshot", "delete", "mem", "nightyl", "--yes")
	const want = `Snapshot "nightyl" of plugin "mem" not found, nothing deleted: the plugin has no snapshot by that ID, and volctl records none by that ID or name (deleted already, or never made); did you mean "nightly"?`
	if code != 0 || !strings.HasPrefix(out, want) || errOut != "" {
		t.Errorf("delete of a mistyped name: exit %d, stdout %q, stderr %q; want exit 0, stdout %q...", code, out, errOut, want)
	}
	code, out, errOut = h.runReported("volume", "snapshot", "delete", "mem", "nightly", "--yes")
	if code != 0 || out != "Snapshot \"nightly\" of plugin \"mem\" deleted\n" {
		t.Errorf("delete by the right name: exit %d, stdout %q, stderr %q; want it deleted", code, out, errOut)
	}
	if list, err := h.e.ListSnapshots(h.ctx, "mem", nil); err != nil || len(list.Snapshots) != 0 {
		t.Errorf("after the delete by name: %+v, %v; want no snapshot", list.Snapshots, err)
	}
}
