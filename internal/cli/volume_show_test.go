package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

var showNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func showVolume() engine.VolumeInfo {
	return engine.VolumeInfo{
		VolumeSummary: engine.VolumeSummary{ID: "db", Namespace: "default", Name: "database", PluginID: "ebs", State: "ready",
			Schedulable: true, AccessMode: spec.MultiNodeSingleWriter, AttachmentMode: spec.FileSystem, CapacityBytes: 10 << 30,
			ReadClaims: 1, WriteClaims: 1, Unsettled: 1, CreatedAt: showNow.Add(-48 * time.Hour)},
		ExternalID: "vol-0123", Provider: "ebs.csi.aws.com", ProviderVersion: "1.2.3", PluginHealthy: true, PluginReady: true,
		RequestedMin: 10 << 30, RequestedMax: 20 << 30,
		Capabilities: []spec.Capability{{AccessMode: spec.MultiNodeSingleWriter, AttachmentMode: spec.FileSystem},
			{AccessMode: spec.SingleNodeReaderOnly, AttachmentMode: spec.FileSystem}},
		MountOptions:       &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "password=hunter2"}},
		TopologyRequest:    &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a", "rack": "1"}}}},
		AccessibleTopology: []spec.Topology{{Segments: map[string]string{"zone": "a"}}},
		Secrets:            spec.Secrets{"token": "s3cr3t", "user": "admin"},
		Parameters:         map[string]string{"type": "gp3"},
		Staged:             true,
		Claims: []engine.ClaimInfo{
			{VolumeID: "db", Alloc: "web-0", Mode: "write", AccessMode: spec.MultiNodeSingleWriter, AttachmentMode: spec.FileSystem,
				State: "published", CreatedAt: showNow.Add(-2 * time.Hour)},
			{VolumeID: "db", Alloc: "report-1", Mode: "read", AccessMode: spec.MultiNodeSingleWriter, AttachmentMode: spec.FileSystem,
				State: "node-staged", NeedsReconcile: true, LastError: "NodePublishVolume: Unavailable: plugin restarting",
				CreatedAt: showNow.Add(-3 * time.Minute)},
		},
	}
}

// The detail view, reviewed as a golden file (go test -run TestVolumeDetail -update).
func TestVolumeDetail(t *testing.T) {
	var b bytes.Buffer
	if err := writeVolumeDetail(&b, showVolume(), showNow); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "noatime", "s3cr3t", "admin"} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("the detail view shows %q:\n%s", secret, b.String())
		}
	}
	golden.RequireEqual(t, b.Bytes())
}

func TestVolumeTable(t *testing.T) {
	vols := []engine.VolumeSummary{
		{ID: "db", Name: "database", PluginID: "ebs", State: "ready", Schedulable: true, AccessMode: spec.SingleNodeWriter, WriteClaims: 1},
		{ID: "logs", Name: "logs", PluginID: "nfs", State: "ready", Schedulable: false, ReadClaims: 2, WriteClaims: 1, Unsettled: 2},
		{ID: "new", PluginID: "ebs", State: "creating"},
	}
	var b bytes.Buffer
	if err := writeVolumeTable(&b, vols); err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, b.Bytes())
}

func TestClaimsCell(t *testing.T) {
	for _, tt := range []struct {
		v    engine.VolumeSummary
		want string
	}{
		{engine.VolumeSummary{}, ""},
		{engine.VolumeSummary{WriteClaims: 1}, "1 write"},
		{engine.VolumeSummary{ReadClaims: 3}, "3 read"},
		{engine.VolumeSummary{ReadClaims: 2, WriteClaims: 1, Unsettled: 1}, "2 read, 1 write (1 unsettled)"},
	} {
		if got := claimsCell(tt.v); got != tt.want {
			t.Errorf("claimsCell(%+v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestCapacityRange(t *testing.T) {
	for _, tt := range []struct {
		min, max int64
		want     string
	}{
		{0, 0, ""},
		{1 << 30, 0, "at least 1.0 GiB"},
		{0, 1 << 20, "at most 1.0 MiB"},
		{1 << 30, 2 << 30, "1.0 GiB - 2.0 GiB"},
	} {
		if got := capacityRange(tt.min, tt.max); got != tt.want {
			t.Errorf("capacityRange(%d, %d) = %q, want %q", tt.min, tt.max, got, tt.want)
		}
	}
}

// A volume with no claim but an attachment left (a forced detach's ControllerUnpublishVolume
// failed) says so in its detail, with what sends it.
func TestVolumeDetailShowsAnAttachmentLeft(t *testing.T) {
	var v engine.VolumeInfo
	if err := json.Unmarshal([]byte(`{"id": "db", "plugin_id": "ebs", "state": "ready", "attached_to": "n1", "unpublish_waits": "Run `+"`volctl reconcile`"+` once plugin \"ebs\" answers (it sends it)", "claims": []}`), &v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeVolumeDetail(&b, v, showNow); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `node "n1"`) || !strings.Contains(b.String(), "ControllerUnpublishVolume") ||
		!strings.Contains(b.String(), "volctl reconcile") {
		t.Fatalf("detail of a volume left attached:\n%s", b.String())
	}
}

// A volume owed a node expansion shows it in its detail, with why it waits (the engine's
// node_expansion_waits): before, the text said nothing of it.
func TestVolumeDetailShowsAnOwedNodeExpansion(t *testing.T) {
	var v engine.VolumeInfo
	if err := json.Unmarshal([]byte(`{"id": "db", "plugin_id": "ebs", "state": "ready", "node_expansion_owed": 4194304,
		"node_expansion_waits": "plugin \"ebs\" expands volumes only offline: release its claims", "claims": []}`), &v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeVolumeDetail(&b, v, showNow); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Node Expansion Owed") || !strings.Contains(b.String(), "to 4.0 MiB: plugin \"ebs\" expands volumes only offline: release its claims") {
		t.Fatalf("detail of a volume owed a node expansion:\n%s", b.String())
	}
}
