package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// `plugin deregister --force` leaves the plugin's snapshots recorded, "still deletable through
// the socket they were made on", and `snapshot list` shows them with a warning ("plugin "mem" is
// not registered: showing volctl's records only"), and so does `snapshot list --plugin mem`.
// Before, that one failed exit 1 "plugin "mem" is not registered", showing none of them: the
// listing a user runs to find what the forced deregistration left, to delete it, hid it. Found
// by helper review61.
func TestSnapshotListOfAForceDeregisteredPluginShowsItsRecords(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "v", spec.SingleNodeWriter)
	if code, out, errOut := h.runReported("volume", "snapshot", "create", "v", "keep"); code != 0 {
		t.Fatalf("snapshot create: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := h.runReported("volume", "deregister", "v", "--yes"); code != 0 {
		t.Fatalf("volume deregister: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := h.runReported("plugin", "deregister", "mem", "--force", "--yes"); code != 0 {
		t.Fatalf("plugin deregister --force: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut := h.runReported("volume", "snapshot", "list")
	if code != 0 || !strings.Contains(out, "keep") {
		t.Fatalf("snapshot list after the forced deregistration: exit %d, stdout %q, stderr %q; want exit 0 listing snapshot \"keep\"", code, out, errOut)
	}
	code, out, errOut = h.runReported("volume", "snapshot", "list", "--plugin", "mem")
	if code != 0 || !strings.Contains(out, "keep") || !strings.Contains(errOut, `plugin "mem" is not registered: showing volctl's records only`) {
		t.Errorf("snapshot list --plugin mem after the forced deregistration: exit %d, stdout %q, stderr %q;\n"+
			"want exit 0 listing the recorded snapshot \"keep\", as the unfiltered list does, with its warning", code, out, errOut)
	}
}

// A spec whose snapshot_id is a recorded snapshot's NAME (the word `snapshot create` was given,
// and which `snapshot delete` and `snapshot deregister` take in place of the ID) is refused as
// invalid before anything is sent, naming that snapshot's ID to write. Before, it failed with
// the plugin's NOT_FOUND and a generic "check snapshot_id", though volctl records that NAME as
// the snapshot's. Found by helper review61.
func TestRestoreGivenASnapshotsNameNamesItsID(t *testing.T) {
	h := newCLIHarness(t)
	// IDs that are not the names asked for, as volctl's hostpath plugin's (snap-<hex>).
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	h.createVolume(t, "v", spec.SingleNodeWriter)
	code, out, errOut := h.runReported("volume", "snapshot", "create", "v", "nightly", "-t", "{{.id}}")
	if code != 0 {
		t.Fatalf("snapshot create: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	id := strings.TrimSpace(out)
	if id == "" || id == "nightly" {
		t.Fatalf("snapshot create printed ID %q; want the plugin's ID, not the name", id)
	}
	dir := writeSpecs(t, map[string]string{"r.hcl": `id        = "r"
name      = "r"
type      = "csi"
plugin_id = "mem"
snapshot_id = "nightly"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`})
	code, out, errOut = h.runReported("volume", "create", filepath.Join(dir, "r.hcl"))
	if code != ExitUsage || !strings.Contains(errOut, `snapshot_id = "`+id+`"`) {
		t.Errorf("volume create with snapshot_id = \"nightly\", the NAME of recorded snapshot %q: exit %d, stderr %q;\n"+
			"want the error to name snapshot %q, the ID snapshot_id takes", id, code, errOut, id)
	}
}
