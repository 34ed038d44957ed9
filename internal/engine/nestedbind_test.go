package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// nestedGroup creates the volumes "data" and "logs" on the hostpath engine and returns a group
// whose alloc mounts data at dests/app and logs below it, at dests/app/logs, its volume blocks
// listed inner first when innerFirst.
func nestedGroup(t *testing.T, h *hostpathEngine, dests string, innerFirst bool) spec.Group {
	t.Helper()
	for _, id := range []string{"data", "logs"} {
		sv := spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
		if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
			t.Fatal(err)
		}
	}
	req := func(id string) spec.VolumeRequest {
		return spec.VolumeRequest{Name: id, Type: "csi", Source: id, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	}
	g := spec.Group{Name: "app", Count: 1,
		Volumes: []spec.VolumeRequest{req("data"), req("logs")},
		Mounts: []spec.VolumeMount{
			{Volume: "data", Destination: filepath.Join(dests, "app"), PropagationMode: spec.PropagationPrivate},
			{Volume: "logs", Destination: filepath.Join(dests, "app", "logs"), PropagationMode: spec.PropagationPrivate},
		}}
	if innerFirst {
		g.Volumes[0], g.Volumes[1] = g.Volumes[1], g.Volumes[0]
	}
	return g
}

// A group alloc whose volume_mounts nest (data at /app, logs at /app/logs), whichever order its
// volume blocks come in: the run binds the outer one first, so what is written at /app/logs
// lands in the logs volume (not hidden under data's bind, nor in data's directory), and the stop
// unbinds the inner one first, so it succeeds and leaves nothing mounted. Real mounts, as root.
func TestNestedVolumeMountsAreBoundOutermostFirstAndUnboundInnermostFirst(t *testing.T) {
	t.Parallel()
	for _, innerFirst := range []bool{false, true} {
		t.Run(listedName(innerFirst), func(t *testing.T) {
			h := newHostpathEngine(t)
			dests := hostpathtest.MountDir(t)
			g := nestedGroup(t, h, dests, innerFirst)
			if _, err := h.e.RunGroup(h.ctx, g); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dests, "app", "logs", "l.txt"), []byte("log"), 0o644); err != nil {
				t.Fatalf("write at the inner destination: %v", err)
			}
			logs, err := h.e.ClaimInfo(h.ctx, "logs", "app[0]")
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(logs.TargetPath, "l.txt")); err != nil || string(b) != "log" {
				t.Errorf("written at %s/app/logs, read through the logs volume's target: %q, %v; want it there", dests, b, err)
			}
			if _, err := h.e.StopGroup(h.ctx, "app"); err != nil {
				t.Errorf("stop: %v", err)
			}
			if m := mountsUnder(t, dests); len(m) != 0 {
				t.Errorf("mounted after the stop: %v", m)
			}
			// The claim GC (the agent's, reconcile's) releases a stopped group's claims in
			// the same order.
			if _, err := h.e.RunGroup(h.ctx, g); err != nil {
				t.Fatal(err)
			}
			markGroupStopped(t, h, "app")
			if _, err := h.e.ReleasePast(h.ctx); err != nil {
				t.Errorf("claim GC: %v", err)
			}
			if m := mountsUnder(t, dests); len(m) != 0 {
				t.Errorf("mounted after the claim GC: %v", m)
			}
		})
	}
}

// A volume_mount destination with something mounted below it (an admin's disk, another
// claim's bind) is refused, naming it: the bind would hide it. Nothing is mounted there. And a
// release of a bind with another mounted below it says what is in the way, not "is something
// still using it?". Real mounts, as root.
func TestVolumeMountOverMountsBelowIsRefused(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dests := hostpathtest.MountDir(t)
	dest := filepath.Join(dests, "app")
	disk := filepath.Join(dest, "disk")
	if err := os.MkdirAll(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(disk, syscall.MNT_DETACH) })
	_, err := h.claimWithBind(t, "data", spec.VolumeMount{Volume: "data", Destination: dest})
	if err == nil || !strings.Contains(err.Error(), "volume_mount "+dest+": "+disk+" is mounted below it, which this bind would hide") {
		t.Fatalf("claim with a volume_mount over a mount: %v\nwant it refused, naming %s", err, disk)
	}
	if m := mountsUnder(t, dests); len(m) != 1 || m[0] != disk {
		t.Errorf("mounts under %s = %v, want only %s", dests, m, disk)
	}
	if err := syscall.Unmount(disk, 0); err != nil {
		t.Fatal(err)
	}

	// Bound, then something is mounted below it: its release names that.
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a", Binds: []spec.VolumeMount{{Volume: "data", Destination: dest, PropagationMode: spec.PropagationPrivate}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(disk, 0o755); err != nil { // in the volume, now bound at dest
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	_, err = h.e.Release(h.ctx, "data", "a")
	if err == nil || !strings.Contains(err.Error(), disk+" is mounted below it; unmount or release that first") {
		t.Errorf("release with a mount below the destination: %v\nwant it to name %s", err, disk)
	}
}

// TestOneVolumeBoundTwiceNestedIsBoundOuterFirstAndUnboundInnerFirst: a group may mount one
// volume twice, at /t/{index} and again below it at /t/{index}/logs: one claim with two
// volume_mounts. Its binds were made and taken down in the order the group lists them: listed
// outer first, the release unmounted /t/{index} first, EBUSY with the inner one below it, and
// the claim was left unpublishing; listed inner first, the run bound the inner one first and
// then refused the outer one (it would hide it). Both orders now bind outermost first and
// unbind innermost first, in the run, the stop and reconcile's claim GC. Real mounts, as root.
func TestOneVolumeBoundTwiceNestedIsBoundOuterFirstAndUnboundInnerFirst(t *testing.T) {
	t.Parallel()
	for _, innerFirst := range []bool{false, true} {
		t.Run(listedName(innerFirst), func(t *testing.T) {
			h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
			dir := hostpathtest.MountDir(t)
			g := multiWriterGroup("nest", 2, filepath.Join(dir, "t", "{index}"), filepath.Join(dir, "t", "{index}", "logs"))
			if innerFirst {
				g.Mounts[0], g.Mounts[1] = g.Mounts[1], g.Mounts[0]
			}
			for _, how := range []string{"stop", "claim GC"} {
				if _, err := h.e.RunGroup(h.ctx, g); err != nil {
					t.Fatalf("run: %v", err)
				}
				if m := mountsUnder(t, filepath.Join(dir, "t")); len(m) != 4 {
					t.Fatalf("mounted after the run: %v; want t/0, t/0/logs, t/1, t/1/logs", m)
				}
				var err error
				if how == "stop" {
					_, err = h.e.StopGroup(h.ctx, "nest")
				} else {
					markGroupStopped(t, h, "nest")
					_, err = h.e.ReleasePast(h.ctx)
				}
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if m := mountsUnder(t, filepath.Join(dir, "t")); len(m) != 0 {
					t.Fatalf("mounted after the %s: %v", how, m)
				}
			}
		})
	}
}

// TestFailedAllocRunReleasesItsNestedClaimsInnerFirst: a group alloc whose volumes nest (data
// at /app, logs at /app/logs) and whose third volume is refused (another alloc holds it) has
// what the run took released again: data, then logs, as they were taken, so data's unmount
// was EBUSY with logs bound below it, and the run's error said releasing data failed too,
// its claim left unpublishing. The run's undo releases innermost first. Real mounts, as root.
func TestFailedAllocRunReleasesItsNestedClaimsInnerFirst(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dests := hostpathtest.MountDir(t)
	g := nestedGroup(t, h, dests, false)
	sv := spec.Volume{ID: "held", Name: "held", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "held", Alloc: "other"}); err != nil {
		t.Fatal(err)
	}
	g.Volumes = append(g.Volumes, spec.VolumeRequest{Name: "held", Type: "csi", Source: "held", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem})
	_, err := h.e.RunGroup(h.ctx, g)
	if err == nil || !strings.Contains(err.Error(), `"held"`) || strings.Contains(err.Error(), "releasing") {
		t.Fatalf("run with a third volume held by another alloc: %v; want its refusal alone, what was taken released again", err)
	}
	if m := mountsUnder(t, dests); len(m) != 0 {
		t.Errorf("mounted after the failed run: %v", m)
	}
	for _, vol := range []string{"data", "logs"} {
		if _, err := h.e.ClaimInfo(h.ctx, vol, "app[0]"); err == nil {
			t.Errorf("app[0] still holds %q after its run failed", vol)
		}
	}
}

// markGroupStopped records group name stopped, as a `group stop` cut short leaves it, for the
// claim GC to release its claims.
func markGroupStopped(t *testing.T, h *hostpathEngine, name string) {
	t.Helper()
	if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		sg, err := tx.Groups().Get(name)
		if err != nil {
			return err
		}
		sg.State = store.GroupStopped
		return tx.Groups().Put(&sg)
	}); err != nil {
		t.Fatal(err)
	}
}

// listedName names a subtest by the order its nested volume_mounts are listed in.
func listedName(innerFirst bool) string {
	if innerFirst {
		return "inner listed first"
	}
	return "outer listed first"
}

// TestNestedPerAllocVolumeMountsOnASharedStateDirAgreeWithReconcile: one multi-writer volume
// bound per alloc at {index} and {index}/logs, its mounts in the state dir shared (as on a
// systemd host, "/" shared). Bidirectional binds of it are then peers of one group, so every
// alloc's logs is one directory on joined mounts: web[1]'s {index}/logs is web[0]'s. Run placed
// a path below a bind it had just made as the directory under that bind (the root disk's
// 1/logs, not the volume's logs), and admitted what every reconcile pass then refused. Run and
// reconcile agree now: bidirectional, web[1] is refused naming web[0]'s; private and
// host-to-task binds are not joined, and all are bound. Each stop leaves nothing mounted.
// Real mounts, as root.
func TestNestedPerAllocVolumeMountsOnASharedStateDirAgreeWithReconcile(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{spec.PropagationPrivate, spec.PropagationHostToTask, spec.PropagationBidirectional} {
		t.Run(mode, func(t *testing.T) {
			h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
			// The state dir's mounts shared: a bind of a target is a peer of it.
			if err := unix.Mount(h.state, h.state, "", unix.MS_BIND, ""); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mount("", h.state, "", unix.MS_SHARED, ""); err != nil {
				t.Fatal(err)
			}
			dir := hostpathtest.MountDir(t)
			g := multiWriterGroup("web", 2, filepath.Join(dir, "{index}"), filepath.Join(dir, "{index}", "logs"))
			for i := range g.Mounts {
				g.Mounts[i].PropagationMode = mode
			}
			_, err := h.e.RunGroup(h.ctx, g)
			if mode == spec.PropagationBidirectional {
				logs0, logs1 := filepath.Join(dir, "0", "logs"), filepath.Join(dir, "1", "logs")
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volume_mount "+logs1) ||
					!strings.Contains(err.Error(), `alloc "web[0]"`) || !strings.Contains(err.Error(), logs0) {
					t.Errorf("run, bidirectional binds of one volume at %s and %s: %v; want web[1] refused, naming web[0]'s", logs0, logs1, err)
				}
			} else if err != nil {
				t.Errorf("run: %v; want every alloc bound", err)
			}
			for range 2 {
				if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
					t.Errorf("reconcile after the run: %+v, %v; want nothing wrong", rep, err)
				}
			}
			if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
				t.Errorf("stop: %v", err)
			}
			for _, i := range []string{"0", "1"} {
				for _, p := range []string{filepath.Join(dir, i, "logs"), filepath.Join(dir, i)} {
					if hostpathtest.Mounted(t, p) {
						t.Errorf("%s is still mounted after the group stopped", p)
					}
				}
			}
		})
	}
}
