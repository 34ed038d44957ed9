package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// The summary lists at most MaxVolumes volumes and counts the rest; unsettled claims get a
// table of their own, and so does the work owed that no claim drives (golden: go test -run
// TestStatusSummary -update).
func TestStatusSummary(t *testing.T) {
	var vols []engine.VolumeSummary
	for i := range 5 {
		vols = append(vols, engine.VolumeSummary{ID: fmt.Sprintf("v%d", i), Name: fmt.Sprintf("v%d", i), PluginID: "hp", State: "ready", Schedulable: true})
	}
	vols[0].WriteClaims, vols[0].Unsettled, vols[0].AccessMode = 1, 1, spec.SingleNodeWriter
	sum := statusSummary{
		Plugins: []engine.PluginInfo{{ID: "hp", Type: spec.PluginMonolith, Provider: "hostpath.csi.volctl.dev", Version: "1.0", Healthy: true, Ready: true, Volumes: 5},
			{ID: "gone", Type: spec.PluginNode, LastError: "socket missing"}},
		Volumes: volumeCounts{Total: 5, Schedulable: 5, InUse: 1},
		Claims:  claimCounts{Live: 1, Write: 1, Unsettled: 1},
		UnsettledClaims: []engine.ClaimInfo{{VolumeID: "v0", Alloc: "web-0", Mode: "write", AccessMode: spec.SingleNodeWriter,
			AttachmentMode: spec.FileSystem, State: "node-staged", NeedsReconcile: true, LastError: "NodePublishVolume: Unavailable",
			CreatedAt: showNow.Add(-5 * time.Minute)}},
		Owed: []engine.OwedWork{
			{Kind: engine.OwedUnpublish, VolumeID: "v1", PluginID: "hp", Since: showNow.Add(-3 * time.Minute),
				What: `attached to node "n1", and no claim holds the attachment (ControllerUnpublishVolume owed)`},
			{Kind: engine.OwedSnapshotDelete, PluginID: "hp", Snapshot: "snap-1", What: `snapshot "snap-1": its delete is under way or was cut short`},
			{Kind: engine.OwedCreate, VolumeID: "v8", PluginID: "hp", What: "its create is under way or was cut short (CreateVolume's answer is not recorded)"},
			{Kind: engine.OwedCreate, VolumeID: "v9", PluginID: "hp", What: "its create is under way or was cut short (CreateVolume's answer is not recorded)"},
		},
	}
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	if err := writeStatusSummary(w, sum, vols, 3, showNow); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if !strings.Contains(b.String(), "... and 2 more (volctl volume status lists them all)") || strings.Contains(b.String(), "v3 ") {
		t.Errorf("the volume list is not cut at 3:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "... and 1 more (volctl status --json lists them all)") || strings.Contains(b.String(), "v9 ") {
		t.Errorf("the owed list is not cut at 3:\n%s", b.String())
	}
	golden.RequireEqual(t, b.Bytes())
}

// With nothing in the state, --json still has every array ([] rather than null) and counts.
func TestStatusRunEmptyJSON(t *testing.T) {
	h := newCLIHarness(t)
	if err := h.e.DeregisterPlugin(h.ctx, "mem", false); err != nil {
		t.Fatal(err)
	}
	ios, _, out, _ := iostreams.Test()
	if err := statusRun(h.ctx, &StatusOptions{IO: ios, Engine: h.engine, Now: nowFunc, Exporter: exportFlags{JSON: true}, MaxVolumes: 20}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"plugins": []`, `"unsettled_claims": []`, `"owed": []`, `"total": 0`, `"live": 0`} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("--json lacks %s:\n%s", w, out)
		}
	}
}

// status ID is volume status ID.
func TestStatusRunWithID(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	ios, _, out, _ := iostreams.Test()
	if err := statusRun(h.ctx, &StatusOptions{IO: ios, Engine: h.engine, Now: nowFunc, ID: "d", Exporter: exportFlags{Template: "{{.id}} {{.provider}}"}}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "db mem.csi.volctl.test" {
		t.Errorf("stdout = %q", out)
	}
}

func nowFunc() time.Time { return showNow }
