package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// sharedDestGroup is a group of count allocs on volume "data" (multi-node-single-writer), read
// or written, with one volume_mount at dest.
func sharedDestGroup(name string, count int, ro bool, dest string) spec.Group {
	return spec.Group{Name: name, Count: count,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data", ReadOnly: ro,
			AccessMode: spec.MultiNodeSingleWriter, AttachmentMode: spec.FileSystem}},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: dest, ReadOnly: ro}}}
}

// newSharedVolumeEngine is a hostpath engine with volume "data" of one access mode, which
// several allocs may claim.
func newSharedVolumeEngine(t *testing.T, mode spec.AccessMode) *hostpathEngine {
	t.Helper()
	h := newHostpathEngine(t)
	sv := spec.Volume{ID: "data", Name: "data", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(mode)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestVolumeMountDestinationOfAnotherClaimIsRefused: a volume_mount destination is a path on
// this host, so two claims whose destinations are one path share one mount. A second claim of
// the same volume bound where another alloc's claim is bound found its volume mounted there
// ("bound already", the same file) and was handed that bind: a reader's read-only volume_mount
// was the writer's read-write bind, and the first alloc's release (its group stopped) unbound
// the destination from under the other, still held, whose alloc then wrote to the host's disk.
// Two groups naming one destination do it, and so does one group whose destination names each
// alloc only in a component the path's cleaning drops ("{index}/.."). The second claim is
// refused, naming the destination and the claim bound there; the first keeps its bind. Real
// mounts, as root.
func TestVolumeMountDestinationOfAnotherClaimIsRefused(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	dest := filepath.Join(hostpathtest.MountDir(t), "shared")
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("web", 1, false, dest)); err != nil {
		t.Fatal(err)
	}
	held := func() {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dest, "through-web"), []byte("x"), 0o644); err != nil {
			t.Fatalf("web[0]'s volume_mount at %s: %v; want it bound, writable", dest, err)
		}
		if m := mountsUnder(t, dest); len(m) != 1 {
			t.Fatalf("mounts at %s: %v; want web[0]'s one bind", dest, m)
		}
	}
	held()

	// (Group pair, whose two allocs are one path, is refused as invalid whatever else is bound
	// there: below.)
	for _, g := range []spec.Group{
		sharedDestGroup("reader", 1, true, dest),
	} {
		info, err := h.e.RunGroup(h.ctx, g)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volume_mount "+dest) || !strings.Contains(err.Error(), " is where alloc \"web[0]\"'s volume \"data\" is bound") {
			t.Fatalf("group %q with a volume_mount at web[0]'s destination = %+v, %v; want a conflict naming the destination and web[0]", g.Name, info, err)
		}
		for _, a := range info.Allocs {
			if len(a.Claims) != 0 {
				t.Fatalf("group %q's alloc %q holds %+v after the refusal; want nothing", g.Name, a.Name, a.Claims)
			}
		}
		if _, err := h.e.StopGroup(h.ctx, g.Name); err != nil {
			t.Fatal(err)
		}
		held()
	}
	live, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("data") })
	if err != nil || len(live) != 1 || live[0].Alloc != "web[0]" {
		t.Fatalf("claims on data: %+v, %v; want web[0]'s alone", live, err)
	}
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, dest); len(m) != 0 {
		t.Fatalf("mounts at %s after web stopped: %v", dest, m)
	}

	// The group's own allocs: pair[1]'s destination is pair[0]'s. Refused as invalid before
	// anything is claimed since TestGroupWhoseAllocsDestinationsOverlapIsRefusedOnceNotEveryRun
	// (review74): the spec can never run, and the conflict refusing pair[1] after pair[0] was
	// bound advised the group's stop, which changed nothing.
	info, err := h.e.RunGroup(h.ctx, sharedDestGroup("pair", 2, true, dest+"/{index}/.."))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "overlap across its allocs") ||
		!strings.Contains(err.Error(), `alloc "pair[1]"`) || !strings.Contains(err.Error(), `alloc "pair[0]"`) {
		t.Fatalf("group pair, both allocs at one destination = %+v, %v; want it refused as invalid, naming both allocs", info, err)
	}
	for _, a := range info.Allocs {
		if len(a.Claims) != 0 {
			t.Fatalf("group pair's alloc %q holds %+v after the refusal; want nothing claimed", a.Name, a.Claims)
		}
	}
	if m := mountsUnder(t, dest); len(m) != 0 {
		t.Fatalf("mounts at %s after group pair was refused: %v; want none", dest, m)
	}
	if _, err := h.e.StopGroup(h.ctx, "pair"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("group stop of the refused group pair: %v; want not found (nothing was recorded)", err)
	}
	_ = unix.Unmount(dest, unix.MNT_DETACH)
}

// TestReleaseLeavesAVolumeMountAnotherClaimIsBoundAt: claims an older volctl admitted at one
// destination (two groups naming one path, before admission refused it) share its one bind.
// The release of either unbound it from under the other, still held, whose alloc then wrote to
// the host's disk there. A release leaves a destination another live claim of the volume is
// bound at; the last one's release unbinds it, and a forced detach of the volume unbinds it
// at once. Real mounts, as root.
func TestReleaseLeavesAVolumeMountAnotherClaimIsBoundAt(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	dest := filepath.Join(hostpathtest.MountDir(t), "shared")
	share := func() {
		t.Helper()
		if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("web", 1, false, dest)); err != nil {
			t.Fatal(err)
		}
		if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("other", 1, true, filepath.Join(hostpathtest.MountDir(t), "other"))); err != nil {
			t.Fatal(err)
		}
		shareAsAnOlderVolctl(t, h, "other[0]", dest)
	}
	share()
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, dest); len(m) != 1 {
		t.Fatalf("mounts at %s after web stopped: %v; want the bind other[0] holds left", dest, m)
	}
	if _, err := h.e.StopGroup(h.ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, dest); len(m) != 0 {
		t.Fatalf("mounts at %s after the last claim bound there was released: %v; want none", dest, m)
	}

	share()
	if _, err := h.e.Detach(h.ctx, "data", true); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, dest); len(m) != 0 {
		t.Fatalf("mounts at %s after a forced detach of the volume: %v; want none", dest, m)
	}
}

// TestGroupsRacingForOneDestinationFromTwoProcesses: two volctl processes running groups whose
// volume_mounts name one destination at once: admission's check is in its transaction, so one
// run binds it and the other is refused, never both handed the one bind. Real mounts, as root.
func TestGroupsRacingForOneDestinationFromTwoProcesses(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	other, err := Open(h.ctx, Config{StateDir: h.state, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	dest := filepath.Join(hostpathtest.MountDir(t), "shared")
	group := func(name string) spec.Group {
		g := sharedDestGroup(name, 1, false, dest)
		g.Volumes[0].AccessMode = spec.MultiNodeMultiWriter
		return g
	}
	for round := range 5 {
		errs := make([]error, 2)
		done := make(chan struct{})
		for i, e := range []*Engine{h.e, other} {
			go func() {
				defer func() { done <- struct{}{} }()
				_, errs[i] = e.RunGroup(h.ctx, group([]string{"a", "b"}[i]))
			}()
		}
		<-done
		<-done
		if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), ErrConflict) {
			t.Fatalf("round %d: the two runs at one destination = %v, %v; want one bound and the other refused", round, errs[0], errs[1])
		}
		if m := mountsUnder(t, dest); len(m) != 1 {
			t.Fatalf("round %d: mounts at %s: %v; want the one bind", round, dest, m)
		}
		for _, g := range []string{"a", "b"} {
			if _, err := h.e.StopGroup(h.ctx, g); err != nil {
				t.Fatal(err)
			}
		}
		if m := mountsUnder(t, dest); len(m) != 0 {
			t.Fatalf("round %d: mounts at %s after both groups stopped: %v", round, dest, m)
		}
	}
}

// TestVolumeMountsOfOneClaimAtOnePathAreRefused: two volume_mounts of one claim whose
// destinations are one path once cleaned ("/srv/a" and "/srv//a/", which the spec check
// compared as written) are one mount, bound once and taken for both, however each asked
// (read-only or not). The claim is refused before anything is recorded, naming both.
func TestVolumeMountsOfOneClaimAtOnePathAreRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	dest := filepath.Join(t.TempDir(), "a")
	t.Cleanup(func() { _ = unix.Unmount(dest, unix.MNT_DETACH) }) // should it be bound after all
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web[0]", Binds: []spec.VolumeMount{
		{Volume: "d", Destination: dest, PropagationMode: spec.PropagationPrivate},
		{Volume: "d", Destination: dest + "//", ReadOnly: true, PropagationMode: spec.PropagationPrivate}}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "volume_mounts "+dest+" and "+dest+"// of alloc \"web[0]\" are one path") {
		t.Fatalf("claim with two volume_mounts at one path = %v; want it refused as invalid, naming both", err)
	}
	if live := h.liveClaims("db"); len(live) != 0 {
		t.Fatalf("claims after the refusal = %+v", live)
	}
}

// shareAsAnOlderVolctl moves alloc's claim of volume "data" (one volume_mount, bound) to dest,
// another claim's destination, as an older volctl admitted such claims: its own bind unmounted,
// the destination rewritten, nothing else changed.
func shareAsAnOlderVolctl(t *testing.T, h *hostpathEngine, alloc, dest string) {
	t.Helper()
	cl, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) (store.Claim, error) { return tx.Claims().Find("data", alloc) })
	if err != nil {
		t.Fatal(err)
	}
	if err := h.e.unbind(h.ctx, &cl); err != nil {
		t.Fatal(err)
	}
	cl.Binds[0].Destination = dest
	if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error { return tx.Claims().Update(&cl) }); err != nil {
		t.Fatal(err)
	}
}
