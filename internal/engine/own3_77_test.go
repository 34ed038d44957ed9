package engine

import (
	"strings"
	"testing"
)

// TestGroupStatusDoesNotSayAHealthyVolumeMountDidNotAnswerForAnotherAllocsHungCover: group
// web's alloc web[0] has its target covered by a file system that does not answer a look (a
// hard NFS mount whose server is gone: hungStack); web[1]'s claim and its volume_mount app-1
// are fine, bound as asked. markUnbound makes every look under ONE deadline, but in two
// phases: it waits for all cover looks first (coversForViewUntil), which for web[0]'s hung
// cover takes the whole bound, and only then starts the bind looks (boundedLooks) with the
// same, now expired, deadline. web[1]'s bind look, started after the bound, is not waited for
// at all: `group status` says "volume_mount .../app-1 did not answer a look within 2s (a file
// system whose server is gone, mounted over it?)", marks the bind unbound and counts web[1] not
// ready; the hung file system is at web[0]'s target, not at app-1, and the advised `findmnt`
// shows nothing wrong there. Correct: one alloc's hung look says only that alloc's claim; every
// other look is given its share of the bound (started with the covers, or not judged late when
// it was never waited for), and web[1] has no error, its bind not marked unbound.
// Found by helper review77 (own3).
func TestGroupStatusDoesNotSayAHealthyVolumeMountDidNotAnswerForAnotherAllocsHungCover(t *testing.T) {
	t.Parallel()
	h, _, cl, _ := groupWithATargetCovered(t, true)
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) }) // before the group's stop (cleanups run last first)
	h.e.cfg.Mounts = hungStack{gate: gate}

	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 2 {
		t.Fatalf("group status = %+v, %v; want web's two allocs", gs, err)
	}
	var healthy *AllocInfo
	for i := range gs[0].Allocs {
		a := &gs[0].Allocs[i]
		if len(a.Claims) != 1 {
			t.Fatalf("group status: alloc %s holds %+v; want its claim", a.Name, a.Claims)
		}
		if a.Claims[0].TargetPath == cl.TargetPath {
			if !strings.Contains(a.Claims[0].Covered, "did not answer") {
				t.Fatalf("group status: alloc %s, its cover not answering: claim %+v; want it said covered (the precondition)", a.Name, a.Claims[0])
			}
			continue
		}
		healthy = a
	}
	if healthy == nil || len(healthy.Claims[0].Binds) != 1 {
		t.Fatalf("group status %+v: want web[1] holding its claim with its volume_mount", gs)
	}
	c := healthy.Claims[0]
	if healthy.Error != "" || c.Binds[0].Unbound || c.Covered != "" {
		t.Fatalf("group status of %s, whose target and volume_mount %s are as they were made (only web[0]'s target %s has a cover that does not answer): "+
			"alloc error %q, bind %+v; want no error and the bind not marked unbound: its look was started only once web[0]'s hung cover had used the whole bound, and was said late",
			healthy.Name, c.Binds[0].Destination, cl.TargetPath, healthy.Error, c.Binds[0])
	}
}
