package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/store/storetest"
)

// diskFullHarness is a harness whose state dir is a small tmpfs, and whose plugin fills that
// file system up as soon as it has answered the RPC named by *fillAfter OK: the step after
// that RPC, which must record what it did, finds the disk full.
func diskFullHarness(t *testing.T) (h *harness, fillAfter *string, free func()) {
	t.Helper()
	var after string
	var fill string
	fillAt := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err == nil && after != "" && strings.HasSuffix(info.FullMethod, "/"+after) {
			fillUp(fill)
		}
		return resp, err
	}
	h, mnt := tmpfsStateHarness(t, "size=2m", fillAt)
	fill = filepath.Join(mnt, "fill")
	return h, &after, func() {
		after = ""
		if err := os.Remove(fill); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

// fillUp writes to file fill until its file system is full.
func fillUp(fill string) {
	f, err := os.OpenFile(fill, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}

// tmpfsStateHarness is a harness whose state dir is on a tmpfs mounted with opts at mnt, its
// plugin served through ic.
func tmpfsStateHarness(t *testing.T, opts string, ic grpc.UnaryServerInterceptor) (h *harness, mnt string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs as the state dir's file system")
	}
	mnt = t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	h = &harness{t: t, ctx: context.Background(), mem: csitest.NewMemPlugin(cfg), faults: csitest.NewFaults(), dir: filepath.Join(mnt, "state")}
	storetest.Seed(t, h.dir) // the schema database, copied: what a full disk does to a command is this test's, not the migrations'
	h.socket, h.stopServe = csitest.Serve(t, csitest.WithServer(h.mem), csitest.WithFaults(h.faults), csitest.WithInterceptor(ic))
	h.mounts = newFakeMounts(h.mem)
	h.open(Config{})
	h.registerPlugin("mem", h.socket)
	return h, mnt
}

// wantDiskFull checks err says the state's file system is full, naming the database, and what
// to do.
func wantDiskFull(t *testing.T, what string, err error, h *harness) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s on a full state dir succeeded", what)
	}
	for _, want := range []string{filepath.Join(h.dir, store.FileName), "disk is full", "free space there"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s on a full state dir: %v\nwant it to say %q", what, err, want)
		}
	}
}

// The state dir fills up right after each RPC of a claim answered OK: the claim fails saying
// the disk is full, the store records no more than the plugin did (never a claim published
// that the plugin has not published), and once space is freed, reconcile finishes the claim
// and a release frees it, the plugin left with nothing.
func TestDiskFullAfterEachClaimRPC(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		t.Run(rpc, func(t *testing.T) {
			t.Parallel() // each on a tmpfs of its own
			h, after, free := diskFullHarness(t)
			h.create(volume("db"))
			*after = rpc
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
			wantDiskFull(t, "claim", err, h)
			wantLeftAsStored(t, "claim", err, h)
			free()
			if _, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile once space is freed: %v", err)
			}
			cls := h.liveClaims("db")
			if len(cls) != 1 || cls[0].State != store.ClaimPublished || cls[0].NeedsReconcile {
				t.Fatalf("claims after reconcile = %+v, want one published", cls)
			}
			if got := h.mem.Targets(h.externalID("db")); len(got) != 1 || got[0] != cls[0].TargetPath {
				t.Errorf("plugin's targets after reconcile = %v, want [%s]", got, cls[0].TargetPath)
			}
			h.release("db", "web-0")
			if got := h.mem.Targets(h.externalID("db")); len(got) != 0 {
				t.Errorf("plugin's targets after release = %v, want none", got)
			}
			if got := h.mem.PublishedNodes(h.externalID("db")); len(got) != 0 {
				t.Errorf("plugin's attachments after release = %v, want none", got)
			}
		})
	}
}

// The state dir fills up right after each RPC of a release answered OK: the release fails
// saying the disk is full, and once space is freed, reconcile (or the release again) finishes
// it, the plugin left with nothing.
func TestDiskFullAfterEachReleaseRPC(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		t.Run(rpc, func(t *testing.T) {
			t.Parallel() // each on a tmpfs of its own
			h, after, free := diskFullHarness(t)
			h.create(volume("db"))
			h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
			*after = rpc
			_, err := h.e.Release(h.ctx, "db", "web-0")
			wantDiskFull(t, "release", err, h)
			wantLeftAsStored(t, "release", err, h)
			free()
			if _, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile once space is freed: %v", err)
			}
			if cls := h.liveClaims("db"); len(cls) != 0 {
				t.Fatalf("claims after reconcile = %+v, want none", cls)
			}
			if got := h.mem.Targets(h.externalID("db")); len(got) != 0 {
				t.Errorf("plugin's targets after reconcile = %v, want none", got)
			}
			if got := h.mem.PublishedNodes(h.externalID("db")); len(got) != 0 {
				t.Errorf("plugin's attachments after reconcile = %v, want none", got)
			}
		})
	}
}

// wantLeftAsStored checks err says the claim was left at the state the store has it in (what
// `volume status` shows, where reconcile starts), and that it is not recorded published.
func wantLeftAsStored(t *testing.T, what string, err error, h *harness) {
	t.Helper()
	cls := h.liveClaims("db")
	if len(cls) != 1 {
		t.Fatalf("%s on a full state dir left claims %+v, want one", what, cls)
	}
	if want := "the claim is left " + string(cls[0].State) + " for `volctl reconcile`"; !strings.Contains(err.Error(), want) {
		t.Errorf("%s on a full state dir: %v\nwant it to say %q, as the store has it", what, err, want)
	}
	if what == "claim" && cls[0].State == store.ClaimPublished {
		t.Errorf("claim recorded published on a full disk: %+v", cls[0])
	}
}

// The state dir fills up right after CreateVolume, DeleteVolume and CreateSnapshot answered
// OK: the command fails saying the disk is full, and once space is freed, reconcile records
// what the plugin did: one volume ready (not a second one created), the volume gone, the
// snapshot recorded.
func TestDiskFullAfterCreateDeleteAndSnapshot(t *testing.T) {
	t.Parallel()
	t.Run(csi.RPCCreateVolume, func(t *testing.T) {
		t.Parallel() // each on a tmpfs of its own
		h, after, free := diskFullHarness(t)
		*after = csi.RPCCreateVolume
		_, err := h.e.CreateVolume(h.ctx, volume("db"))
		wantDiskFull(t, "create", err, h)
		free()
		if _, err := h.e.Reconcile(h.ctx); err != nil {
			t.Fatalf("reconcile once space is freed: %v", err)
		}
		v := h.volumeInfo("db")
		if v.State != string(store.VolumeReady) || len(h.mem.Volumes()) != 1 || h.mem.Volumes()[0].ID != v.ExternalID {
			t.Fatalf("after reconcile: volume %+v, plugin's volumes %+v; want it ready, the plugin's one volume", v, h.mem.Volumes())
		}
	})
	t.Run(csi.RPCDeleteVolume, func(t *testing.T) {
		t.Parallel() // each on a tmpfs of its own
		h, after, free := diskFullHarness(t)
		h.create(volume("db"))
		*after = csi.RPCDeleteVolume
		wantDiskFull(t, "delete", h.e.DeleteVolume(h.ctx, "db"), h)
		free()
		if _, err := h.e.Reconcile(h.ctx); err != nil {
			t.Fatalf("reconcile once space is freed: %v", err)
		}
		if _, err := h.e.Volume(h.ctx, "db"); !errors.Is(err, ErrNotFound) {
			t.Errorf("volume after reconcile: %v, want not found", err)
		}
		if got := h.mem.Volumes(); len(got) != 0 {
			t.Errorf("plugin's volumes after reconcile = %+v, want none", got)
		}
	})
	t.Run(csi.RPCCreateSnapshot, func(t *testing.T) {
		t.Parallel() // each on a tmpfs of its own
		h, after, free := diskFullHarness(t)
		h.create(volume("db"))
		*after = csi.RPCCreateSnapshot
		_, err := h.e.CreateSnapshot(h.ctx, "db", "snap", nil)
		wantDiskFull(t, "snapshot create", err, h)
		free()
		if _, err := h.e.Reconcile(h.ctx); err != nil {
			t.Fatalf("reconcile once space is freed: %v", err)
		}
		var (
			snaps   []store.Snapshot
			intents []store.SnapshotCreate
		)
		if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
			var err error
			if snaps, err = tx.Snapshots().List("mem"); err != nil {
				return err
			}
			intents, err = tx.Snapshots().ListCreates("mem")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(snaps) != 1 || len(intents) != 0 || len(h.mem.Snapshots()) != 1 || snaps[0].SnapshotID != h.mem.Snapshots()[0].ID {
			t.Fatalf("after reconcile: snapshots %+v, intents %+v, plugin's %+v; want the plugin's one recorded", snaps, intents, h.mem.Snapshots())
		}
	})
}

// The state dir's file system has no free inodes left (a tmpfs with few, an ext4 holding many
// small files) while it has space: the directories a claim makes (staging, publish) and the
// lock file a new volume's first operation makes cannot be made. Each error names the path,
// says that inodes, not space, ran out, where to see them (df -i) and what to do: "no space
// left on device" alone sent the reader to df, which shows space free. Nothing is recorded past
// what the plugin did, and once inodes are freed, reconcile publishes the claim.
func TestStateDirOutOfInodesSaysSo(t *testing.T) {
	t.Parallel()
	h, mnt := tmpfsStateHarness(t, "size=16m,nr_inodes=200", func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return handler(ctx, req)
	})
	// A claim and release made the plugin's lock files; db's staging directory is still to make.
	h.create(volume("old"))
	h.claim(ClaimRequest{VolumeID: "old", Alloc: "web-0"})
	h.release("old", "web-0")
	h.create(volume("db"))
	fill := filepath.Join(mnt, "fill")
	if err := os.Mkdir(fill, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		f, err := os.Create(filepath.Join(fill, strconv.Itoa(i)))
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s's inodes: %v, want ENOSPC", mnt, err)
			}
			break
		}
		f.Close()
	}
	wantNoInodes := func(what string, err error, path string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s with no free inodes: no error", what)
		}
		for _, want := range []string{path, "no free inodes", "df -i", mnt} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s with no free inodes: %v\nwant it to say %q", what, err, want)
			}
		}
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	wantNoInodes("claim", err, filepath.Join(h.dir, "staging", "mem", "db"))
	wantLeftAsStored(t, "claim", err, h)
	_, err = h.e.CreateVolume(h.ctx, volume("logs"))
	wantNoInodes("create", err, filepath.Join(h.dir, "locks", "volume-logs.lock"))

	if err := os.RemoveAll(fill); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once inodes are freed: %v", err)
	}
	if cls := h.liveClaims("db"); len(cls) != 1 || cls[0].State != store.ClaimPublished {
		t.Fatalf("claims after reconcile = %+v, want one published", cls)
	}
}
