package cli

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// A degraded claim (published before, its restore failing) says so in `volctl status`, in
// `volume status`'s claim table, and in the summary's counts.
func TestStatusShowsDegradedClaims(t *testing.T) {
	c := engine.ClaimInfo{VolumeID: "db", Alloc: "web-0", Mode: "write", AccessMode: spec.SingleNodeWriter,
		AttachmentMode: spec.FileSystem, State: "node-staged", NeedsReconcile: true, Degraded: true,
		LastRPC: "NodeStageVolume", LastCode: "Internal", LastError: "NodeStageVolume: Internal: disk gone",
		CreatedAt: showNow.Add(-time.Minute)}
	if got := claimStateCell(c); got != "node-staged (degraded, needs reconcile)" {
		t.Errorf("claim state cell = %q", got)
	}
	sum := statusSummary{Claims: claimCounts{Live: 1, Write: 1, Unsettled: 1, Degraded: 1}, UnsettledClaims: []engine.ClaimInfo{c}}
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	if err := writeStatusSummary(w, sum, nil, 20, showNow); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	for _, want := range []string{"1 not at rest, 1 degraded", "node-staged (degraded, needs reconcile)", "disk gone"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
}
