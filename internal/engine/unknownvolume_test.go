package engine

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// A plugin restarted with another state (another --root, a wiped data directory) answers
// NodeUnpublishVolume NOT_FOUND for a volume it mounted before: NOT_FOUND means done, but the
// target is still mounted. The release stays on the release path, and its error says what the
// answer was and its likely cause, not that the plugin "did not unmount it", which sends the
// user to unmount by hand a mount the right plugin would undo and record: a plugin restarted
// as it ran before then finds its own record of a target volctl freed. Real mounts, as root.
func TestNotFoundOverAMountSaysThePluginDoesNotKnowTheVolume(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Fatal(err)
	}
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.NotFound)
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil {
		t.Fatal("release whose target stays mounted succeeded")
	}
	for _, want := range []string{`plugin "mem" answered NodeUnpublishVolume NOT_FOUND`, "does not know volume", "restarted with another state", "volctl reconcile",
		// The other way a plugin comes not to know a volume it mounted: its ID registered since
		// on another process's socket, which only the event log tells from a registration again.
		`or plugin "mem" was registered since on a socket another process serves`, "`volctl events --plugin mem --kind plugin-register`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("release error = %q\nwant it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "did not unmount it") {
		t.Errorf("release error = %q\nwant no word of a plugin that did not unmount: it said it does not know the volume", err)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || !live[0].Releasing || live[0].State == store.ClaimNodeDetached {
		t.Fatalf("claim after the release = %+v, want it still on the release path, not past NodeUnpublishVolume", live)
	}
	// The plugin as it was: reconcile finishes the release.
	h.faults.Clear()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v (%+v)", err, rep)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v, want none", live)
	}
}

// The same plugin, whose target was also bound over itself once more (a plugin that mounts
// without looking first, asked twice): two mounts are stacked at the target, and one umount by
// hand takes the topmost only, the release failing again on the same path. The error says how
// many are stacked there and to unmount it that many times. Real mounts, as root.
func TestAMountLeftStackedSaysHowManyToUnmount(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Fatal(err)
	}
	live := h.liveClaims("v")
	if len(live) != 1 {
		t.Fatalf("claims = %+v, want one", live)
	}
	target := live[0].TargetPath
	if err := unix.Mount(target, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.NotFound)
	_, err := h.e.Release(h.ctx, "v", "a")
	if want := target + " (2 mounts are stacked there: unmount it 2 times)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("release error = %v\nwant it to say %q", err, want)
	}
}
