package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// specFile61 writes src to a file of its own and returns its path.
func specFile61(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A volume created with a preferred topology whose create again changes its mount_options is
// refused, and the refusal names the way: "`volctl volume register` of the spec with
// external_id = ... added, and snapshot_id, clone_id and a preferred topology left out" (as
// `volume create --help` says too). Followed to the letter, that registration is taken: its
// required topologies (none) are compared, the preferred one a register spec cannot hold is
// not. Before, checkImmutable compared the whole stored topology_request with the register
// spec's, "topology_request cannot be changed (it is 0 required, 1 preferred, the spec says
// empty)", advising a deregister, refused while the volume was claimed. Found by helper
// review61.
func TestRegisterAdvisedForAVolumeCreatedWithAPreferredTopology(t *testing.T) {
	// A plugin that takes topology: a create with a topology_request is refused one that does not.
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) { c.Plugin.VolumeAccessibilityConstraints = true })
	const base = "id = \"db\"\nname = \"db\"\ntype = \"csi\"\nplugin_id = \"mem\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	const preferred = "topology_request {\n  preferred {\n    topology {\n      segments {\n        zone = \"z1\"\n      }\n    }\n  }\n}\n"
	const mountOptions = "mount_options {\n  fs_type = \"xfs\"\n}\n"
	if code, _, errOut := h.runReported("volume", "create", specFile61(t, "db.hcl", base+preferred)); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	v, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := h.runReported("volume", "create", specFile61(t, "db.hcl", base+preferred+mountOptions))
	if code != ExitConflict || !strings.Contains(errOut, "volctl volume register") || !strings.Contains(errOut, "a preferred topology left out") {
		t.Fatalf("create again with other mount_options: exit %d: %s; want exit %d naming the register that applies them", code, errOut, ExitConflict)
	}
	// The advice, followed: external_id added, the preferred topology left out.
	advised := base + mountOptions + "external_id = \"" + v.ExternalID + "\"\n"
	code, out, errOut := h.runReported("volume", "register", specFile61(t, "db.hcl", advised))
	if code != 0 || !strings.Contains(out, `Volume "db" updated: mount_options changed`) {
		t.Errorf("volume register as the create's refusal advises: exit %d\nstdout: %s\nstderr: %s\nwant exit 0, the mount_options applied", code, out, errOut)
	}
}

// A registration of storage another volume records already is refused, naming that volume and
// the ways out: the spec registered under that volume's ID, or that volume deregistered first
// (which keeps the storage). Before, it named the volume but not what to do, where every other
// refusal of this kind names its way out. Found by helper review61.
func TestRegisterOfStorageAnotherVolumeRecordsNamesTheWayOut(t *testing.T) {
	h := newCLIHarness(t)
	h.mem.AddVolume(csi.Volume{ID: "ext-1"})
	spec := func(id string) string {
		return specFile61(t, id+".hcl", "id = \""+id+"\"\ntype = \"csi\"\nplugin_id = \"mem\"\nexternal_id = \"ext-1\"\n"+
			"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n")
	}
	if code, _, errOut := h.runReported("volume", "register", spec("data")); code != 0 {
		t.Fatalf("register data: exit %d: %s", code, errOut)
	}
	code, out, errOut := h.runReported("volume", "register", spec("data2"), "--json")
	if code != ExitConflict || !strings.Contains(errOut, `volume "data"`) || strings.TrimSpace(out) != "[]" {
		t.Fatalf("register data2: exit %d\nstdout: %s\nstderr: %s\nwant exit %d naming volume \"data\", [] on stdout", code, out, errOut, ExitConflict)
	}
	if !strings.Contains(errOut, "volctl volume deregister data` first") || !strings.Contains(errOut, `register the spec with id = "data"`) {
		t.Errorf("the refusal names no way out (`volctl volume deregister data` first, to record the storage as \"data2\"; or register it as \"data\"):\n%s", errOut)
	}
}

// A registration again whose capacity_max is below the volume's size (grown since by `volume
// expand --limit`) is refused, naming the size, the record left as it was. Before, it was
// taken, "Volume "d" updated: capacity_max changed", the record then holding a 4 GiB volume
// requested at "4.0 GiB - 2.0 GiB", a minimum above its maximum that the spec parser refuses in
// any file: the spec checked in before the expand, registered again (to rotate a secret),
// undid the limit the expand raised, silently. Found by helper review61.
func TestRegisterAgainWithACapacityMaxBelowTheVolumesSize(t *testing.T) {
	h := newCLIHarness(t)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	file := specFile61(t, "d.hcl", "id = \"d\"\ntype = \"csi\"\nplugin_id = \"mem\"\nexternal_id = \"ext-1\"\ncapacity_max = \"2GiB\"\n"+
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n")
	if code, _, errOut := h.runReported("volume", "register", file); code != 0 {
		t.Fatalf("register: exit %d: %s", code, errOut)
	}
	if code, _, errOut := h.runReported("volume", "expand", "d", "--size", "4GiB", "--limit", "4GiB"); code != 0 {
		t.Fatalf("expand: exit %d: %s", code, errOut)
	}
	code, out, errOut := h.runReported("volume", "register", file)
	v, err := h.e.Volume(h.ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitConflict || !strings.Contains(errOut, `volume "d" is 4GiB, and this spec's capacity_max 2GiB is below it`) || v.RequestedMax != 0 && v.RequestedMax < v.CapacityBytes {
		t.Errorf("register again with capacity_max 2GiB of a volume of %d bytes: exit %d\nstdout: %s\nstderr: %s\nrecorded capacity_min %d, capacity_max %d; "+
			"want exit %d naming the volume's size, its capacity_max left at or above it", v.CapacityBytes, code, out, errOut, v.RequestedMin, v.RequestedMax, ExitConflict)
	}
}
