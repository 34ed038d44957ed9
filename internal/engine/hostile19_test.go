package engine

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestClaimFindingItsStagingMountedByAnotherRefusesAndNamesIt: the volume's staging path holds
// a mount the plugin did not make (made by hand, or by another tool) while the volume is
// recorded unstaged. The claim sends NodeUnstageVolume first (unstageUnrecorded), which the
// hostpath plugin refuses for a mount not its own; the claim fails naming the path and what to
// do, the mount is left as it is, and once it is gone the claim stages the volume.
func TestClaimFindingItsStagingMountedByAnotherRefusesAndNamesIt(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	sv := spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	staging := stagingPath(h.e.StateDir(), "hp", "v")
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "theirs.txt"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(other, staging, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(staging, unix.MNT_DETACH) })

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		t.Fatal("claim of a volume whose staging path holds another mount succeeded")
	}
	for _, want := range []string{staging, "not recorded staged", "unmount " + staging + " by hand"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim error = %v\nwant it to say %q", err, want)
		}
	}
	if data, rerr := os.ReadFile(filepath.Join(staging, "theirs.txt")); rerr != nil || string(data) != "theirs" {
		t.Fatalf("the mount at the staging path was not left as it was: %q %v", data, rerr)
	}

	if err := unix.Unmount(staging, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the mount is gone: %v", err)
	}
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err != nil {
		t.Fatalf("claim once the mount is gone: %v", err)
	}
	if cl.State != string(store.ClaimPublished) {
		t.Fatalf("claim once the mount is gone is %s, want published", cl.State)
	}
}

// TestPluginRestartedWithAnExposedSocketIsWarnedOf: the plugin, registered on a socket in a
// directory only root may write, restarts and leaves that directory writable by every user
// (mode 0777): while it restarts, any local user could bind the name first and be sent every
// request, secrets included. `plugin register` warned of exposure only when it ran; the next
// connection, which fingerprints the restarted plugin afresh, logs it and records a
// plugin-exposed event, so that the agent's log and `volctl events` show it.
func TestPluginRestartedWithAnExposedSocketIsWarnedOf(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	var logs strings.Builder
	h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	h.create(volume("v"))
	if evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "plugin-exposed"}); err != nil || len(evs) != 0 {
		t.Fatalf("plugin-exposed events before the restart: %+v %v; want none", evs, err)
	}
	dir := filepath.Dir(h.socket)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	h.restartKeepingState(func(*csitest.MemConfig) {})
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "plugin-exposed"})
	if err != nil {
		t.Fatal(err)
	}
	want := "which other users may write (mode 0777)"
	if len(evs) != 1 || !strings.Contains(evs[0].Message, want) || !strings.Contains(evs[0].Message, h.socket) {
		t.Fatalf("plugin-exposed events after the plugin restarted in a directory of mode 0777: %+v; want one naming %s, saying %q", evs, h.socket, want)
	}
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("log after the plugin restarted in a directory of mode 0777:\n%s\nwant a warning saying %q", logs.String(), want)
	}
}
