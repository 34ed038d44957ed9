package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// Another driver now answers on a registered plugin's socket. The claim's probe connection is
// refused ("now served by X, registered as Y"), and the claim answered with a conflict (exit 4,
// "claim refused"); before, admission had inserted it all the same, and it stayed recorded,
// taken, holding the single-node-writer volume against every other alloc, for reconcile (the
// agent's pass) to publish later for an alloc told its claim was refused. Only a plugin that
// does not answer at all is left unjudged (claimProbe, PluginNotAnswering).
func TestClaimThroughAnImpostorIsRefusedWithNothingRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a", capab(spec.SingleNodeWriter)))
	h.create(volume("b", capab(spec.SingleNodeWriter)))
	h.open(Config{})
	h.claim(ClaimRequest{VolumeID: "a", Alloc: "web"})

	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Name = "impostor.csi.example" })
	h.open(Config{})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "b", Alloc: "job"})
	if err == nil || !strings.Contains(err.Error(), "impostor.csi.example") {
		t.Fatalf("claim with another driver on the socket: %v; want it refused naming the driver", err)
	}
	if live := h.liveClaims("b"); len(live) != 0 {
		t.Errorf("claim refused as %q, yet it is recorded and holds volume b: %+v", err, live)
	}
}

// The plugin came back from a restart without its node service (NodeGetCapabilities
// UNIMPLEMENTED). A claim the plugin cannot publish, found out only on connecting, is refused
// with nothing recorded; before, it was admitted and left taken, holding the volume.
func TestClaimThroughAPluginBackWithoutItsNodeServiceIsRefusedWithNothingRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a", capab(spec.SingleNodeWriter)))
	h.create(volume("b", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "a", Alloc: "web"})
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithRegister(func(s *grpc.Server) {
		h.mem.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))
	h.open(Config{})
	h.mem.ResetCalls()

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "b", Alloc: "job"})
	if err == nil {
		t.Fatal("claim through a plugin without its node service succeeded")
	}
	if live := h.liveClaims("b"); len(live) != 0 {
		t.Errorf("claim through a plugin that cannot publish it (%v) is recorded and holds volume b: %+v", err, live)
	}
}

// bindOrLinkSocketDir makes mem's socket directory other's, as how says: "symlink" (mem's
// directory replaced by a symlink to other's) or "bind mount" (other's directory bind-mounted
// on mem's).
func bindOrLinkSocketDir(t *testing.T, how, memSocket, otherSocket string) {
	t.Helper()
	dir := filepath.Dir(memSocket)
	switch how {
	case "symlink":
		if err := os.Rename(dir, dir+".old"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(dir); os.RemoveAll(dir + ".old") })
		if err := os.Symlink(filepath.Dir(otherSocket), dir); err != nil {
			t.Fatal(err)
		}
	case "bind mount":
		if os.Geteuid() != 0 {
			t.Skip("a bind mount of a directory needs root")
		}
		if err := syscall.Mount(filepath.Dir(otherSocket), dir, "", syscall.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	}
}

// Plugin mem's socket directory is made plugin other's (a symlink, or other's directory
// bind-mounted on mem's), and the user, told by the refusal that "if the two are one plugin
// process on purpose, register "mem" again", does so. Volumes db (mem) and db2 (other) record
// one external ID, now one storage in one process. A symlinked directory was refused a second
// writer (refuseStorageInUseElsewhere: pathMates resolved the directory's symlinks); with a
// bind-mounted one, which the connection equally takes for one process (sameEntry), pathMates did
// not see the two plugin IDs as one, and both claims were admitted and published: two writers
// on one multi-node-single-writer storage (one writer, which CSI leaves the CO to enforce; a
// plugin that neither stages nor lists published nodes, an NFS-like driver, publishes both).
func TestOneStorageThroughABindMountedSocketDirectoryIsNotWrittenTwice(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"symlink", "bind mount", "registered at a bind mount of other's directory"} {
		t.Run(how, func(t *testing.T) {
			// Plugins that neither stage nor attach (an NFS-like driver): nothing but volctl's
			// admission stands between two claims of one storage.
			plain := func(cfg *csitest.MemConfig) {
				cfg.Node.StageUnstageVolume = false
				cfg.Controller.PublishUnpublishVolume = false
				cfg.Controller.ListVolumesPublishedNodes = false
			}
			h := newHarness(t, plain)
			ocfg := csitest.DefaultMemConfig()
			ocfg.NodeID = "node-1"
			plain(&ocfg)
			other := csitest.NewMemPlugin(ocfg)
			socket, _ := csitest.Serve(t, csitest.WithServer(other))
			h.registerPlugin("other", socket)
			// multi-node-single-writer: one writer, which CSI leaves the CO to enforce (the
			// plugin publishes as many as it is asked to).
			v2 := volume("db2", capab(spec.MultiNodeSingleWriter))
			v2.PluginID = "other"
			ext2 := h.create(v2).ExternalID
			if ext := h.create(volume("db", capab(spec.MultiNodeSingleWriter))).ExternalID; ext != ext2 || filepath.Base(socket) != filepath.Base(h.socket) {
				t.Fatalf("premise: external IDs %q %q, sockets %s %s", ext, ext2, socket, h.socket)
			}
			h.mounts = newFakeMounts(h.mem, other)
			h.open(Config{})
			if how == "registered at a bind mount of other's directory" {
				// mem registered again, on purpose, on other's socket through a directory
				// bind-mounted from other's: spelled as other's path, refuseJoinedStorage
				// refuses the registration ("would be one process with plugin other, and its
				// volume db records the storage of that plugin's volume db2").
				if os.Geteuid() != 0 {
					t.Skip("a bind mount of a directory needs root")
				}
				dir := t.TempDir()
				if err := syscall.Mount(filepath.Dir(socket), dir, "", syscall.MS_BIND, ""); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
				alias := filepath.Join(dir, filepath.Base(socket))
				_, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: alias})
				if err != nil && (!errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume "db2"`)) {
					t.Fatalf("registration of mem at a bind mount of other's directory: %v; want it admitted, or refused as a conflict naming db2", err)
				}
				if err != nil {
					return // refused as joining one storage's two records (refuseJoinedStorage)
				}
			} else {
				bindOrLinkSocketDir(t, how, h.socket, socket)
				// One process on purpose, as the refusal of mem's next connection advises.
				h.registerPlugin("mem", h.socket)
			}

			h.claim(ClaimRequest{VolumeID: "db", Alloc: "a"})
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db2", Alloc: "b"})
			if err == nil {
				t.Fatalf("volumes db (plugin mem) and db2 (plugin other) are external ID %q in one plugin process (mem's socket directory is other's, %s), "+
					"multi-node-single-writer, and alloc a holds db's write claim: alloc b's write claim of db2 was admitted and published too: two writers on one storage (claims of db2: %+v)",
					ext2, how, h.liveClaims("db2"))
			}
			if !errors.Is(err, ErrConflict) {
				t.Errorf("claim of db2 while db, the same storage, is held: %v; want a conflict", err)
			}
		})
	}
}
