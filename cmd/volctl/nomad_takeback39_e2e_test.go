package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// The way back, against a real Nomad: a volume with secrets, a file system type and mount
// flags, and a context its plugin returned is handed over, edited in Nomad (`nomad volume
// register` of another file system type, other mount flags, a second capability, no
// secrets: what Nomad's users may do to their copy), deregistered there and taken back.
// volctl's record comes back as it went (capabilities, mount options, secrets' keys,
// context, external ID, no claims), nothing of Nomad's edit taken; and the local claim after
// gives the plugin the secrets, the mount flags and the context the volume was created with.
//
// Opt-in: NOMAD_BIN names a Nomad binary; as root (the local claim mounts).
func TestNomadTakeBackComesBackAsItWent(t *testing.T) {
	if os.Getenv("NOMAD_BIN") != "" {
		hostpathtest.RequireMount(t)
	}
	const secret = "take-back-secret-39"
	w, _, mem := startMemPluginInNomadWith(t, "mem", func(c *csitest.MemConfig) {
		c.CreateContext = map[string]string{"share": "s-39", "zone": "z1"}
		c.MountRoot = t.TempDir()
	})
	t.Cleanup(func() {
		if err := mem.UnmountAll(); err != nil {
			t.Error(err)
		}
	})
	w.stepTo("volctl creates volume db with secrets, mount options and a plugin's context, and hands it over")
	w.writeFile("db.hcl", strings.Replace(dbSpec, `plugin_id = "hp"`, `plugin_id = "mem"`, 1)+`secrets {
  token = "`+secret+`"
}
mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime", "nodev"]
}
`)
	w.volctl(0, "volume", "create", filepath.Join(w.dir, "db.hcl"))
	status := func() map[string]any {
		t.Helper()
		var st map[string]any
		if err := json.Unmarshal([]byte(w.volctl(0, "volume", "status", "db", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	before := status()
	ext, _ := before["external_id"].(string)
	w.volctl(0, "nomad", "register", "db")

	w.stepTo("Nomad's copy edited: xfs, other flags, a second capability, no secrets")
	w.editInNomad("edited.hcl", ext, `capacity_min = "10MiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}
mount_options {
  fs_type     = "xfs"
  mount_flags = ["sync"]
}`)
	w.stepTo("deregistered in Nomad, taken back")
	w.nomad("volume", "deregister", "db")
	if out := w.volctl(0, "nomad", "release", "db"); !strings.Contains(out, `Took volume "db" back`) {
		t.Fatalf("release: %s", out)
	}
	after := status()
	if h, ok := after["handover"]; ok && h != nil {
		t.Errorf("taken back, the volume still has a handover: %v", h)
	}
	for _, m := range []map[string]any{before, after} {
		delete(m, "handover")
	}
	if !reflect.DeepEqual(before, after) {
		for _, k := range slices.Sorted(maps.Keys(after)) {
			if !reflect.DeepEqual(before[k], after[k]) {
				t.Errorf("after the take-back, %s is %v; it went as %v", k, after[k], before[k])
			}
		}
	}

	w.stepTo("a local claim gives the plugin what the volume was created with")
	mem.ResetCalls()
	w.volctl(0, "volume", "claim", "db", "--alloc", "local-0")
	var staged *csi.NodeStageVolumeRequest
	for _, c := range mem.Calls() {
		if r, ok := c.Request.(csi.NodeStageVolumeRequest); ok && c.RPC == csi.RPCNodeStageVolume {
			staged = &r
		}
	}
	if staged == nil {
		t.Fatalf("the local claim sent no NodeStageVolume: %+v", mem.Calls())
	}
	if got := staged.Secrets.Plain(); got["token"] != secret || len(got) != 1 {
		t.Errorf("NodeStageVolume's secrets after the take-back: %d of them, token kept: %v", len(got), got["token"] == secret)
	}
	if mo := staged.Capability.MountOptions; mo == nil || mo.FSType != "ext4" || !slices.Equal(mo.MountFlags.Plain(), []string{"noatime", "nodev"}) {
		t.Errorf("NodeStageVolume's mount options after the take-back: %v", staged.Capability)
	}
	if staged.Capability.Capability != (spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}) {
		t.Errorf("NodeStageVolume's capability after the take-back: %v", staged.Capability)
	}
	if staged.VolumeContext["share"] != "s-39" || staged.VolumeContext["zone"] != "z1" {
		t.Errorf("NodeStageVolume's context after the take-back: %v", staged.VolumeContext)
	}
	w.volctl(0, "volume", "release", "db", "--alloc", "local-0")
	w.stopMemPluginInNomad("mem")
}
