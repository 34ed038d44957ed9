package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// rootsUnreadable is the kernel's mount table whose MountRoots (statmount(2), or the table
// read it falls back to) fails with a read error while fail is set.
type rootsUnreadable struct {
	kernelMounts
	fail atomic.Bool
}

func (m *rootsUnreadable) MountRoots(paths ...string) (map[string]mountRoot, error) {
	if m.fail.Load() {
		return nil, store.MountTableUnreadable(errors.New("read /proc/self/mountinfo: input/output error"))
	}
	return m.kernelMounts.MountRoots(paths...)
}

// TestReleaseOverACoveredStagingWithItsMountUnreadableSendsNoUnstage: the release of a claim left
// node-staged over a covered staging sends no NodeUnstageVolume (unstageUncovered); with the read
// of what the staging path shows failing, stagingShows took the error for "nothing mounted
// there", the check passed, and the unstage was sent over the cover, the release reported done.
// The design: a mount table that cannot be read cannot say nothing is mounted. Found by helper
// review72.
func TestReleaseOverACoveredStagingWithItsMountUnreadableSendsNoUnstage(t *testing.T) {
	h, staging := coveredStagingAfterStage(t)
	m := &rootsUnreadable{}
	h.open(Config{Mounts: m})
	m.fail.Store(true)
	h.mem.ResetCalls()
	res, err := h.e.Release(h.ctx, "w", "a")
	t.Logf("release of w for a with MountRoots failing: %+v %v", res, err)
	_, serr := os.Stat(filepath.Join(staging, "other-data"))
	if n := h.mem.CallCount(csi.RPCNodeUnstageVolume); n != 0 || serr != nil {
		t.Fatalf("release over a covered staging, what the staging shows unreadable: NodeUnstageVolume sent %d time(s), the cover (other-data) at %s: %v; "+
			"want none sent (the read error taken for a refusal, not for \"nothing mounted there\")", n, staging, serr)
	}
	if err == nil || !strings.Contains(err.Error(), "mount table") {
		t.Errorf("release: %v; want an error naming the mount table read", err)
	}
}

// TestNodeStagedClaimIsNotDrivenOntoACoverWithItsMountUnreadable: the same read error on
// reconcile's drive-on of a node-staged claim: the check passed, and the claim was published
// from what covers the staging. Found by helper review72.
func TestNodeStagedClaimIsNotDrivenOntoACoverWithItsMountUnreadable(t *testing.T) {
	h, staging := coveredStagingAfterStage(t)
	m := &rootsUnreadable{}
	h.open(Config{Mounts: m})
	m.fail.Store(true)
	rep, rerr := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v %+v", rerr, rep.Problems)
	live := h.liveClaims("w")
	if len(live) != 1 {
		t.Fatalf("claims of w after reconcile: %+v", live)
	}
	defer func() { _ = unix.Unmount(live[0].TargetPath, unix.MNT_DETACH) }()
	if _, err := os.Stat(filepath.Join(live[0].TargetPath, "other-data")); err == nil || live[0].State == store.ClaimPublished {
		t.Fatalf("claim of w for a driven on by reconcile with the staging's mount unreadable: state %s, target %s shows other-data (stat: %v): "+
			"published from the mount covering the staging %s, the read error taken for nothing mounted there", live[0].State, live[0].TargetPath, err, staging)
	}
}

// tableUnreadable is the fake table whose MountsUnder fails with a read error while fail is set.
type tableUnreadable struct {
	*fakeMounts
	fail atomic.Bool
}

func (m *tableUnreadable) MountsUnder(dir string) (map[string]bool, error) {
	if m.fail.Load() {
		return nil, store.MountTableUnreadable(errors.New("read /proc/self/mountinfo: input/output error"))
	}
	return m.fakeMounts.MountsUnder(dir)
}

// TestExpandWithTheTableUnreadableSaysTheNodeStepIsOwed: a `volume expand` whose controller
// answered node_expansion_required records the new size with the NodeExpandVolume owed; then
// expandOnNode reads the mount table (only mounted targets are sent it) and the read fails. The
// error said only "finding where it is mounted for NodeExpandVolume: read mount table: ...": not
// that the volume is recorded at the new size with the node step owed, nor what sends it (every
// other failure there says "it stays owed: run `volctl volume expand ...` again or `volctl
// reconcile`"; expandOnNode's own contract: "A failure leaves it owed, and says how to go on").
// Found by helper review72.
func TestExpandWithTheTableUnreadableSaysTheNodeStepIsOwed(t *testing.T) {
	h := newHarness(t, nil)
	m := &tableUnreadable{fakeMounts: h.mounts}
	h.open(Config{Mounts: m})
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.mem.AnswerNodeExpansionRequired(true)
	m.fail.Store(true)
	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	m.fail.Store(false)
	t.Logf("expand with the mount table unreadable: %v", err)
	if err == nil {
		t.Fatalf("expand: no error, with the mount table unreadable")
	}
	owed := h.owed("v")
	if owed == 0 {
		t.Fatalf("setup: no node expansion owed after the failed read")
	}
	if !strings.Contains(err.Error(), "owed") || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("expand's error: %v\nwant it to say the node expansion (%d bytes) is owed, the volume recorded at the new size, and what sends it (`volctl reconcile`, or the expand again)", err, owed)
	}
}
