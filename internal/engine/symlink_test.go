package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// kernelLikeMounts answers like the kernel's table does for a state dir reached through a
// symlink: mount points are reported at their real paths, and only those under the dir as
// given (mountinfo's prefix filter) are returned. What is mounted is fakeMounts' answer.
type kernelLikeMounts struct{ inner *fakeMounts }

func (m kernelLikeMounts) Mounted(root, path string) (MountPoint, error) {
	return m.inner.Mounted(root, path)
}

func (m kernelLikeMounts) MountsUnder(dir string) (map[string]bool, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	all, err := m.inner.MountsUnder(real)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	for p := range all {
		if strings.HasPrefix(p, prefix) {
			out[p] = true
		}
	}
	return out, nil
}

// symlinkTo makes a symlink to dir in a new temp dir and returns its path.
func symlinkTo(t *testing.T, dir string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "state-link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// TestSymlinkedStateDirIsResolvedOnce: with the state dir reached through a symlink, the
// paths volctl builds under it must compare equal with the mount table's (which has real
// paths), or every reconcile pass restores every claim again.
func TestSymlinkedStateDirIsResolvedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	link := symlinkTo(t, h.dir)
	h.e.Close()
	e, err := Open(h.ctx, Config{StateDir: link, Mounts: kernelLikeMounts{h.mounts}, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h.e = e
	h.create(volume("v"))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if real, _ := filepath.EvalSymlinks(h.dir); !strings.HasPrefix(cl.TargetPath, real+string(filepath.Separator)) {
		t.Errorf("target path %s is not under the real state dir %s", cl.TargetPath, real)
	}
	h.mem.ResetCalls()
	for pass := 1; pass <= 2; pass++ {
		rep, err := h.e.Reconcile(h.ctx)
		if err != nil || len(rep.Actions) != 0 || len(rep.Problems) != 0 {
			t.Fatalf("reconcile pass %d with everything mounted = %+v, %v; want nothing to do", pass, rep, err)
		}
	}
	if got := h.rpcs(); len(got) != 0 {
		t.Fatalf("idle reconcile passes sent %v", got)
	}
}

// TestHostpathSymlinkedStateDir is TestSymlinkedStateDirIsResolvedOnce with real mounts.
func TestHostpathSymlinkedStateDir(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	p, err := hostpath.New(hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true})
	if err != nil {
		t.Fatal(err)
	}
	faults := csitest.NewFaults()
	socket, _ := csitest.Serve(t, csitest.WithServer(p), csitest.WithFaults(faults))
	h := &hostpathEngine{ctx: t.Context(), faults: faults, plugin: p, state: symlinkTo(t, hostpathtest.MountDir(t))}
	h.e, err = Open(h.ctx, Config{StateDir: h.state, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.e.Close() })
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	cl := h.claimNew(t, "data", "a", spec.SingleNodeWriter)
	if !hostpathtest.Mounted(t, cl.TargetPath) {
		t.Fatal("target not mounted")
	}
	publishes, stages := faults.Calls(csi.RPCNodePublishVolume), faults.Calls(csi.RPCNodeStageVolume)
	for pass := 1; pass <= 2; pass++ {
		rep, err := h.e.Reconcile(h.ctx)
		if err != nil || len(rep.Actions) != 0 || len(rep.Problems) != 0 {
			t.Fatalf("reconcile pass %d with everything mounted = %+v, %v; want nothing to do", pass, rep, err)
		}
	}
	if faults.Calls(csi.RPCNodePublishVolume) != publishes || faults.Calls(csi.RPCNodeStageVolume) != stages {
		t.Fatalf("idle reconcile passes sent NodePublishVolume %d -> %d, NodeStageVolume %d -> %d times",
			publishes, faults.Calls(csi.RPCNodePublishVolume), stages, faults.Calls(csi.RPCNodeStageVolume))
	}
	if _, err := h.e.Release(h.ctx, "data", "a"); err != nil {
		t.Fatal(err)
	}
}

// TestPathsRecordedThroughASymlinkStillMatch: claims and stagings recorded by a volctl that
// did not resolve a symlinked state dir keep their paths under the link. Reconcile must see
// their mounts (at real paths) as theirs: not restore them on every pass, and above all not
// report them as orphans to be unmounted by hand. A new claim publishes from their staging.
func TestPathsRecordedThroughASymlinkStillMatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	link := symlinkTo(t, h.dir)
	h.e.Close()
	open := func() *Engine {
		e, err := Open(h.ctx, Config{StateDir: link, Mounts: kernelLikeMounts{h.mounts}, Retry: fastRetry})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	// The older volctl: its state dir as given, unresolved.
	h.e = open()
	h.e.cfg.StateDir, h.e.linkDir = link, ""
	var err error
	if h.e.locks, err = newLocker(link); err != nil {
		t.Fatal(err)
	}
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if !strings.HasPrefix(a.TargetPath, link) {
		t.Fatalf("the older volctl's target path %s is not under the link", a.TargetPath)
	}
	h.e.Close()

	h.e = open()
	h.mem.ResetCalls()
	for pass := 1; pass <= 2; pass++ {
		rep, err := h.e.Reconcile(h.ctx)
		if err != nil || len(rep.Actions) != 0 || len(rep.Problems) != 0 {
			t.Fatalf("reconcile pass %d over rows recorded through the link = %+v, %v; want nothing to do", pass, rep, err)
		}
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	if got := filterNode(h.rpcs()); !slices.Equal(got, []string{csi.RPCNodePublishVolume}) {
		t.Fatalf("reconcile and a second claim sent %v; want one NodePublishVolume onto the existing staging", got)
	}
	// The old claim's mount goes away: it is restored at the path it was published at.
	h.mounts.markGone(h.e.realPath(a.TargetPath))
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != "restored" {
		t.Fatalf("reconcile after the old claim's mount went = %+v, %v; want it restored", rep, err)
	}
	if np, _ := csitest.LastRequest[csi.NodePublishVolumeRequest](h.mem); np.TargetPath != a.TargetPath {
		t.Fatalf("restore published at %s, want the recorded %s", np.TargetPath, a.TargetPath)
	}
	h.mounts.reset()
	for _, alloc := range []string{"a", "b"} {
		h.release("v", alloc)
	}
	if st, ok := h.staging("v"); ok {
		t.Fatalf("staging left after releasing both claims: %+v", st)
	}
	// Tidying the old claim's directories stopped at the state dir: the symlink is still there.
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the state dir's symlink after the releases: %v, %v", fi, err)
	}
	if _, err := os.Stat(filepath.Dir(a.TargetPath)); !os.IsNotExist(err) {
		t.Errorf("the old claim's publish dir was left behind: %v", err)
	}
}

// TestForcedDetachDoesNotFollowPlantedSymlinks: a forced detach unmounts volctl's own target
// and staging paths itself. With a symlink planted in the state dir in place of a claim's
// publish directory (or the volume's staging directory), pointing at a directory that holds a
// mount at the same name, the unmount must not follow it: what is mounted elsewhere stays.
func TestForcedDetachDoesNotFollowPlantedSymlinks(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	cl := h.claim(ClaimRequest{VolumeID: "db", Alloc: "a1"})
	st, ok := h.staging("db")
	if !ok || st.StagingPath == "" {
		t.Fatal("the claim left no staging")
	}
	elsewhere := hostpathtest.MountDir(t)
	for i, p := range []string{cl.TargetPath, st.StagingPath} {
		// victim/<i>/<last name> is a mount point; the path's parent becomes a link to victim/<i>.
		victim := filepath.Join(elsewhere, fmt.Sprint(i))
		target := filepath.Join(victim, filepath.Base(p))
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", target, "tmpfs", 0, ""); err != nil {
			t.Fatal(err)
		}
		parent := h.e.realPath(filepath.Dir(p))
		if err := os.RemoveAll(parent); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, parent); err != nil {
			t.Fatal(err)
		}
	}
	res, err := h.e.Detach(h.ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{cl.TargetPath, st.StagingPath} {
		if target := filepath.Join(elsewhere, fmt.Sprint(i), filepath.Base(p)); !hostpathtest.Mounted(t, target) {
			t.Errorf("a forced detach followed a symlink planted in the state dir and unmounted %s (warnings %q)", target, res.Warnings)
		}
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "is a symlink") {
		t.Errorf("the forced detach does not say it found a symlink: %q", res.Warnings)
	}

	// Tidying up after it does not remove, through such a link, an empty directory elsewhere.
	if err := os.Remove(h.e.realPath(filepath.Dir(st.StagingPath))); err != nil { // the planted link
		t.Fatal(err)
	}
	h.create(volume("db2", capab(spec.SingleNodeWriter)))
	cl = h.claim(ClaimRequest{VolumeID: "db2", Alloc: "a2"})
	victim := filepath.Join(elsewhere, "empty")
	if err := os.MkdirAll(filepath.Join(victim, filepath.Base(cl.TargetPath)), 0o755); err != nil {
		t.Fatal(err)
	}
	parent := h.e.realPath(filepath.Dir(cl.TargetPath))
	if err := os.RemoveAll(parent); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, parent); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Detach(h.ctx, "db2", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(victim, filepath.Base(cl.TargetPath))); err != nil {
		t.Errorf("a forced detach removed a directory through a symlink planted in the state dir: %v", err)
	}
}
