package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestGroupRunAgainWithMountOptionsRemovedIsNotDone: `group run --help` promises that an alloc
// holding a claim "with other mount_options ... than the spec's now ... is not changed under it:
// that alloc fails (exit 4) and keeps its claims". A group first run with mount_options
// (mount_flags = ["noexec"]) and run again with its mount_options block removed answers
// success, every alloc "has its volumes", and records the new spec (no mount options) as the
// group's, while every claim stays published noexec: the user is told the spec is applied
// when it is not, and `export nomad` then exports a spec the mounts do not follow. Mount
// options a group's spec no longer sets are a change of the claim as much as other ones
// (heldOtherwise compares only options the request sets, the leniency `volume claim` again
// wants): the run should refuse the alloc as a conflict, as it does for other flags or a
// volume_mount removed ("bind-mounted otherwise (nowhere)").
// Found by helper review74.
func TestGroupRunAgainWithMountOptionsRemovedIsNotDone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(2)
	g := dbGroup(2)
	g.Volumes[0].MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"noexec"}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if live := h.liveClaims(spec.AllocName("data", i)); len(live) != 1 || !slices.Contains(live[0].MountFlags, "noexec") {
			t.Fatalf("claims of data[%d] after the first run = %+v; want one published noexec", i, live)
		}
	}
	info, err := h.e.RunGroup(h.ctx, dbGroup(2)) // the same spec, its mount_options block removed
	stillNoexec := 0
	for i := 0; i < 2; i++ {
		if live := h.liveClaims(spec.AllocName("data", i)); len(live) == 1 && slices.Contains(live[0].MountFlags, "noexec") {
			stillNoexec++
		}
	}
	if err == nil && stillNoexec > 0 {
		t.Errorf("group run again with mount_options removed = %s, no error, while %d of 2 claims are still published with mount flag noexec, "+
			"which the spec no longer asks: want the allocs refused (a conflict naming `volctl group stop db`), as for other mount options", allocsWords(info), stillNoexec)
	}
	if err != nil && !errors.Is(err, ErrConflict) {
		t.Errorf("group run again with mount_options removed = %v; want a conflict", err)
	}
}

// allocsWords says how many of a run's allocs got their volumes, for a failure message.
func allocsWords(info GroupInfo) string {
	ok := 0
	for _, a := range info.Allocs {
		if a.Error == "" {
			ok++
		}
	}
	return fmt.Sprintf("%d of %d allocs served", ok, len(info.Allocs))
}

// TestGroupWhoseAllocsDestinationsOverlapIsRefusedOnceNotEveryRun: a group spec whose
// volume_mount destinations overlap across allocs (alloc 1's "logs" destination dir/0/logs1
// lies inside alloc 0's "data" destination dir/0) passes spec validation, which compares an
// alloc's destinations with its own alone. Every run then binds alloc 0 and refuses alloc 1
// (refuseInside), a conflict (exit 4, as for a claim someone else holds) whose advice is "release
// that claim first (`volctl group stop web` releases it)". Followed, the stop releases
// everything and the run again refuses alloc 1 the very same way: the advice is a loop, and the
// spec can never run. Correct: a spec whose allocs' destinations coincide or nest is refused as
// invalid before anything is claimed (by the spec check, or by the run for the group's own
// claims), or at least the refusal does not advise stopping the group whose own other alloc is
// in the way; the run after the advised stop must not be refused the same way.
// Found by helper review74.
func TestGroupWhoseAllocsDestinationsOverlapIsRefusedOnceNotEveryRun(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	for _, v := range []string{"data[0]", "data[1]", "logs[0]", "logs[1]"} {
		h.createWriterVolume(t, v)
	}
	dir := hostpathtest.MountDir(t)
	src := `group "web" {
  count = 2
  volume "data" {
    type            = "csi"
    source          = "data"
    per_alloc       = true
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume "logs" {
    type            = "csi"
    source          = "logs"
    per_alloc       = true
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume      = "data"
    destination = "` + filepath.Join(dir, "{index}") + `"
  }
  volume_mount {
    volume      = "logs"
    destination = "` + filepath.Join(dir, "0", "logs{index}") + `"
  }
}
`
	g, diags := spec.NewParser().ParseGroup("web.hcl", []byte(src))
	if diags.HasErrors() {
		// Refused by the spec check: what is asked.
		return
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	_, err := h.e.RunGroup(h.ctx, *g)
	if err == nil {
		t.Fatalf("group run of allocs whose destinations nest across allocs succeeded; want alloc web[1] refused (its logs destination lies in web[0]'s data bind)")
	}
	if errors.Is(err, ErrInvalid) {
		// Refused as a spec that can never run, saying so: what is asked.
		if !strings.Contains(err.Error(), "overlap across its allocs") {
			t.Errorf("group run refused as invalid, without saying the destinations overlap across allocs: %v", err)
		}
		return
	}
	advice := "`volctl group stop web` releases it"
	if !strings.Contains(err.Error(), advice) {
		t.Fatalf("group run = %v; want it refused (what this test is about: its advice)", err)
	}
	// Follow the advice: release that claim (the group's stop), then run the group again.
	if _, serr := h.e.StopGroup(h.ctx, "web"); serr != nil {
		t.Fatalf("group stop, as advised: %v", serr)
	}
	_, again := h.e.RunGroup(h.ctx, *g)
	if again != nil && strings.Contains(again.Error(), advice) {
		t.Errorf("group run refused alloc web[1] advising %q; followed (group stop, then run again), the run is refused the same way:\n%v\n"+
			"the spec passes validation but can never run, each run binding web[0] and refusing web[1] (exit 4): want it refused as invalid, "+
			"or advice that is not a loop", advice, again)
	}
}
