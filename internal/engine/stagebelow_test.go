package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// belowMounts is fakeMounts for a plugin that mounts a volume's staging below the staging path
// (at <staging>/globalmount), not at it: the table has the mount below, never the path itself.
type belowMounts struct {
	*fakeMounts
	staging string
}

func (b *belowMounts) MountsUnder(dir string) (map[string]bool, error) {
	m, err := b.fakeMounts.MountsUnder(dir)
	if err == nil && m[b.staging] {
		delete(m, b.staging)
		m[filepath.Join(b.staging, "globalmount")] = true
	}
	return m, err
}

// A plugin that staged a volume with its mount below the staging path, then came back without
// STAGE_UNSTAGE_VOLUME: the release cannot send NodeUnstageVolume, and must not drop the
// staging record ("nothing is mounted there") while a mount is left below the path. It keeps
// the record, names the mount, and reconcile finishes once it is unmounted.
func TestLostStageCapabilityKeepsAMountBelowTheStaging(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	below := filepath.Join(st.StagingPath, "globalmount")
	if err := os.Mkdir(below, 0o750); err != nil { // the plugin's mount point
		t.Fatal(err)
	}
	h.open(Config{Mounts: &belowMounts{fakeMounts: h.mounts, staging: st.StagingPath}})
	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false }, "v")

	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), below) || !strings.Contains(err.Error(), "STAGE_UNSTAGE_VOLUME") {
		t.Fatalf("release with a mount left below the staging = %v\nwant an error naming %s", err, below)
	}
	if got, ok := h.staging("v"); !ok || !got.Staged || got.StagingPath != st.StagingPath {
		t.Fatalf("the staging record was dropped while a mount is below its path: %+v", got)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "capability-lost"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 0 {
		t.Fatalf("capability-lost events = %+v, want none while the mount is there", evs)
	}
	if rep, err := h.e.Reconcile(h.ctx); err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, below) {
		t.Fatalf("reconcile with the mount below the staging = %+v, %v", rep, err)
	}

	// Unmounted by hand: the next pass finishes the release.
	if err := os.Remove(below); err != nil {
		t.Fatal(err)
	}
	h.mounts.markGone(st.StagingPath) // the old plugin's staging, which fakeMounts goes by
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the mount is gone: %+v, %v", rep, err)
	}
	if _, ok := h.staging("v"); ok {
		t.Error("the staging record is still there after the mount went")
	}
}

// A plugin that mounts its staging below the staging path it was given is accounted for by the
// volume's staging: reconcile does not report its mount as an orphan "no claim or staging
// accounts for" (and fail the pass, exit 1) while the volume is staged and published as it
// should be. A mount below no recorded path still is one.
func TestReconcileCountsAMountBelowAStagingAsItsOwn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	if err := os.Mkdir(filepath.Join(st.StagingPath, "globalmount"), 0o750); err != nil {
		t.Fatal(err)
	}
	h.open(Config{Mounts: &belowMounts{fakeMounts: h.mounts, staging: st.StagingPath}})
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 0 {
		t.Fatalf("reconcile of a published claim whose staging is mounted below its path = %+v, %v; want nothing to do", rep, err)
	}

	// The staging is undone (the plugin unmounts what it mounted): a mount below its path,
	// there after that, is nobody's.
	if err := os.Remove(filepath.Join(st.StagingPath, "globalmount")); err != nil {
		t.Fatal(err)
	}
	h.release("v", "a")
	h.open(Config{Mounts: &fixedMounts{fakeMounts: h.mounts, extra: filepath.Join(st.StagingPath, "globalmount")}})
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || rep.Problems[0].Kind != "orphan" {
		t.Fatalf("reconcile with a mount below a staging no longer recorded = %+v, %v; want it reported", rep, err)
	}
}

// fixedMounts is fakeMounts with one more mount point.
type fixedMounts struct {
	*fakeMounts
	extra string
}

func (f *fixedMounts) MountsUnder(dir string) (map[string]bool, error) {
	m, err := f.fakeMounts.MountsUnder(dir)
	if err == nil {
		m[f.extra] = true
	}
	return m, err
}
