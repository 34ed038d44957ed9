package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A volume an older volctl created in namespace team_a, which Nomad can hold no volume in (its
// namespace names are letters, digits and hyphens): its spec is refused now, saying to leave
// namespace out or name another, and create of the spec so edited was refused as a namespace
// change, saying to "delete the volume and create it again", which deletes its data. The
// refusal now says the way that keeps it: deregister (the storage stays), then register of the
// spec with its external ID in the new namespace. Followed, the data is there.
func TestVolumeMovedToAnotherNamespaceKeepsItsData(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	sv := spec.Volume{ID: "data", Name: "data", Namespace: "team_a", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err != nil {
		t.Fatal(err)
	}
	dir, ok := h.plugin.VolumePath(v.ExternalID)
	if !ok {
		t.Fatal("volume path unknown to the plugin")
	}
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spec.ValidateNamespace(sv.Namespace); err == nil || !strings.Contains(err.Error(), "volctl volume deregister --yes ID") {
		t.Errorf("namespace team_a refused: %v\nwant it to say how a volume volctl has moves, its data kept", err)
	}

	sv.Namespace = "team-a"
	_, err = h.e.CreateVolume(h.ctx, sv)
	for _, want := range []string{"namespace cannot be changed", "`volctl volume deregister --yes data`", "`volctl volume register`", "external_id", "`volctl volume status data`"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("create in another namespace: %v\nwant it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "delete the volume and create it again") {
		t.Errorf("create in another namespace: %v\nsays to delete the volume, and its data with it", err)
	}

	// The way the error says.
	if _, err := h.e.DeregisterVolume(h.ctx, "data", false); err != nil {
		t.Fatalf("deregister: %v", err)
	}
	sv.ExternalID = v.ExternalID
	moved, err := h.e.RegisterVolume(h.ctx, sv)
	if err != nil {
		t.Fatalf("register in namespace team-a by its external ID: %v", err)
	}
	if moved.Namespace != "team-a" {
		t.Errorf("volume registered in namespace %q, want team-a", moved.Namespace)
	}
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a1"})
	if err != nil {
		t.Fatalf("claim after the move: %v", err)
	}
	requireKept(t, cl.TargetPath, "the moved volume's claim")
	if _, err := h.e.Release(h.ctx, "data", "a1"); err != nil {
		t.Fatal(err)
	}
}
