package engine

import (
	"os"
	"path/filepath"
	"testing"
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

// A plugin that mounts its staging below the staging path it was given is accounted for by the
// volume's staging: reconcile does not report its mount as an orphan "no claim or staging
// accounts for" (and fail the pass, exit 1) while the volume is staged and published as it
// should be. A mount below no recorded path still is one.
func TestReconcileCountsAMountBelowAStagingAsItsOwn(t *testing.T) {
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
