package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestCrashInTheCleanupOfAnUnusableCreateAnswer: a plugin that allocates in 4 MiB units and
// ignores limit_bytes answers a 1 MiB volume's CreateVolume (capacity_max 1 MiB) with a volume
// volctl cannot use, and volctl deletes it again. `volume create` is killed at each step of that
// cleanup: once the intent is recorded deleting with the answer's ID (create:unusable), after
// DeleteVolume answered (rpc:DeleteVolume), once the intent is back to bare
// (create:unusable-deleted). Reconcile, or the same create again, then leaves the plugin
// without the unusable volume and volctl without a record of the volume (the create is
// refused as before, by name), and the plugin and the records agree.
func TestCrashInTheCleanupOfAnUnusableCreateAnswer(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	cfg := csitest.DefaultMemConfig()
	cfg.Granularity = 4 << 20
	mem := csitest.NewMemPlugin(cfg)
	socket, _ := csitest.Serve(t, csitest.WithServer(mem))
	env := &hostEnv{t: t, state: hostpathtest.ShortDir(t), socket: socket}
	env.ok("plugin", "register", "--id", "hp", "--socket", socket)
	for _, fp := range []string{"create:unusable", "rpc:DeleteVolume", "create:unusable-deleted"} {
		for _, finish := range []string{"reconcile", "create"} {
			t.Run(fp+"/"+finish, func(t *testing.T) {
				env.t = t
				id := "u-" + strings.NewReplacer(":", "-").Replace(fp) + "-" + finish
				path := filepath.Join(t.TempDir(), "volume.hcl")
				src := "id = \"" + id + "\"\nname = \"" + id + "\"\ntype = \"csi\"\nplugin_id = \"hp\"\ncapacity_min = \"1MiB\"\ncapacity_max = \"1MiB\"\n" +
					"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
				if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
					t.Fatal(err)
				}
				env.crash(bin, fp, "volume", "create", path)
				switch finish {
				case "reconcile":
					env.run(nil, "reconcile") // a create left to finish is sent again, and refused again: a problem
				case "create":
					if out, err := env.run(nil, "volume", "create", path); err == nil || !strings.Contains(out, id) {
						t.Fatalf("the same create again: %v\n%s\nwant it refused naming volume %s", err, out, id)
					}
				}
				env.ok("reconcile")
				if out, err := env.run(nil, "volume", "status", id); err == nil {
					t.Fatalf("volume %s, whose only answer was unusable, is recorded:\n%s", id, out)
				}
				if got := mem.Volumes(); len(got) != 0 {
					t.Fatalf("the plugin keeps %+v, which volctl no longer records", got)
				}
				env.checkInvariants()
			})
		}
	}
}
