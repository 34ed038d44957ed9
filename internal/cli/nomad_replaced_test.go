package cli

import (
	"maps"
	"strings"
	"testing"
)

// Nomad has volume db registered already, by hand (`nomad volume register`) or by an older
// volctl, with its storage (plugin, external ID) but other capabilities, mount options and
// capacity: the registration replaces them with volctl's, as Nomad takes an update's. Before,
// it said only `Updated volume "db"`: what Nomad's copy had, and its jobs may rely on (a
// multi-node mode), was gone without a word, though --dry-run names it. Now the registration
// says, field by field, what Nomad's copy had and what it has now.
func TestNomadRegisterOverNomadsCopySaysWhatItReplaced(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	nomadHasDBFromBefore(t, h, a, map[string]any{
		"RequestedCapabilities": []any{map[string]any{"AccessMode": "multi-node-multi-writer", "AttachmentMode": "file-system"}},
		"MountOptions":          map[string]any{"FSType": "xfs"},
		"RequestedCapacityMin":  float64(1 << 30),
	})
	out, errOut, err := registerIn(h, a)
	if err != nil || !strings.Contains(out, `Updated volume "db"`) {
		t.Fatalf("register over Nomad's copy: %q, %v", out, err)
	}
	for _, want := range []string{
		`capabilities: Nomad's ["multi-node-multi-writer"/"file-system"]; volctl's ["single-node-writer"/"file-system"]`,
		`mount_options: Nomad's fs_type "xfs"`,
		"capacity: Nomad's min 1GiB",
		"the registration replaced what Nomad's copy had",
	} {
		if !strings.Contains(out+errOut, want) {
			t.Errorf("register over a copy Nomad had with other fields:\n%s%s\nwant it to say %q", out, errOut, want)
		}
	}

	// Sent again, nothing differs: nothing is said to be replaced.
	out, errOut, err = registerIn(h, a)
	if err != nil || strings.Contains(out+errOut, "replaced") {
		t.Errorf("register again over volctl's own copy: %s%s (%v), want no word of anything replaced", out, errOut, err)
	}
}

// nomadHasDBFromBefore gives n a copy of volume db of h, registered there before volctl handed
// it over (by hand, or by an older volctl): its storage (plugin hp, db's external ID) and the
// topology volctl's plugin gives it, which Nomad keeps, with fields besides.
func nomadHasDBFromBefore(t *testing.T, h *cliHarness, n *fakeNomad, fields map[string]any) {
	t.Helper()
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	node := []any{map[string]any{"Segments": map[string]any{"topology.hostpath.volctl.dev/node": "n1"}}}
	v := map[string]any{"PluginID": "hp", "ExternalID": info.ExternalID, "Topologies": node, "RequestedTopologies": map[string]any{"Required": node}}
	maps.Copy(v, fields)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.vols["default/db"] = true
	n.sent["default/db"] = v
}
