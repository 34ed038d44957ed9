package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"

	"github.com/volctl/volctl/internal/store"
)

// TestGroupRunStoppedBeforeAnyAllocSaysStopped: a `group stop` from another volctl lands right
// after a `group run` recorded the group (group:recorded), before the run claims anything:
// every alloc's claim is refused (the group is stopped). The run then went on as if it ran:
// it reported the group "failed" (or "running") of a group recorded stopped, recorded the
// refusals as its run errors and ran a scale-down. It reports the group stopped, a conflict.
func TestGroupRunStoppedBeforeAnyAllocSaysStopped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool // the group ran before, its allocs holding claims
	}{{"fresh", false}, {"again", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.createDBVolumes(2)
			if tc.before {
				if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
					t.Fatal(err)
				}
			}
			other := h.otherProcess()
			ran := false
			h.e.failpointHook = func(name string) {
				if name != "group:recorded" || ran {
					return
				}
				ran = true
				if _, err := other.StopGroup(h.ctx, "db"); err != nil {
					t.Errorf("the other process's stop: %v", err)
				}
			}
			info, err := h.e.RunGroup(h.ctx, dbGroup(2))
			h.e.failpointHook = nil
			if !ran {
				t.Fatal("the run passed no group:recorded failpoint")
			}
			if !errors.Is(err, ErrConflict) {
				t.Errorf("run = %v; want a conflict", err)
			}
			stored, gerr := h.e.Groups(h.ctx, "db")
			if gerr != nil {
				t.Fatal(gerr)
			}
			if stored[0].State != string(store.GroupStopped) {
				t.Fatalf("group recorded %q; want stopped", stored[0].State)
			}
			if info.State != string(store.GroupStopped) {
				t.Errorf("run reports the group %q, of a group recorded stopped (its error: %v)", info.State, err)
			}
			if live := h.groupLiveClaims("db"); len(live) != 0 {
				t.Errorf("stopped group holds %d claim(s): %+v", len(live), live)
			}
			if len(info.Released) != 0 {
				t.Errorf("the run released %+v, which the stop releases: no scale-down runs once stopped", info.Released)
			}
		})
	}
}

// TestGroupStopWithAFailedReleaseOvertakenByARunSaysSo: a `group stop` whose release of one
// alloc's claim fails (left for reconcile), and which then, waiting for another alloc's volume,
// is overtaken by a `group run` from another volctl (the run hands alloc 1 its claim again and
// records the group running), said only the failure: "the group is stopped; `volctl reconcile`
// finishes the release" (exit 1) of a group recorded running, alloc 1 holding the run's claim; a
// purge said "it stays recorded, stopped". Both say the group was run again (a conflict), and
// the failed release beside it.
func TestGroupStopWithAFailedReleaseOvertakenByARunSaysSo(t *testing.T) {
	for _, purge := range []bool{false, true} {
		t.Run(map[bool]string{false: "stop", true: "purge"}[purge], func(t *testing.T) {
			h := newHarness(t, nil)
			g := spec.Group{Name: "db", Count: 2, Volumes: []spec.VolumeRequest{
				{Name: "data", Type: "csi", Source: "data", PerAlloc: true, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
			}}
			h.create(volume("data[0]"))
			h.create(volume("data[1]"))
			if _, err := h.e.RunGroup(h.ctx, g); err != nil {
				t.Fatal(err)
			}
			other := h.otherProcess()
			h.failUnpublishOf("data[0]")
			unlock := h.lockVolume("data[1]")
			ctx, waiting := whenWaitingForLock(h.ctx, "data[1]")
			stopDone := make(chan error, 1)
			go func() {
				var err error
				if purge {
					_, err = h.e.PurgeGroup(ctx, "db")
				} else {
					_, err = h.e.StopGroup(ctx, "db")
				}
				stopDone <- err
			}()
			waitFor(t, waiting, "the stop to wait for data[1]'s lock")
			if c := h.liveClaims("data[0]"); len(c) != 1 || !c[0].Releasing {
				t.Fatalf("data[0]'s claims while the stop waits for data[1] = %+v; want its failed release left marked", c)
			}
			_, runErr := other.RunGroup(h.ctx, g)
			unlock()
			stopErr := <-stopDone
			t.Logf("run: %v", runErr)
			infos, err := h.e.Groups(h.ctx, "db")
			if err != nil {
				t.Fatal(err)
			}
			if infos[0].State == string(store.GroupStopped) {
				t.Fatalf("group recorded stopped; the sequence did not overtake the stop")
			}
			if c := h.liveClaims("data[1]"); len(c) != 1 || c[0].Releasing {
				t.Fatalf("data[1]'s claims = %+v; want the run's, kept", c)
			}
			if stopErr == nil {
				t.Fatal("stop succeeded")
			}
			if strings.Contains(stopErr.Error(), "is stopped") || strings.Contains(stopErr.Error(), "stays recorded, stopped") || !errors.Is(stopErr, ErrConflict) ||
				!strings.Contains(stopErr.Error(), "was run again by another volctl meanwhile") || !strings.Contains(stopErr.Error(), `release "data[0]" for alloc "db[0]"`) {
				t.Errorf("stop/purge overtaken by a run (group recorded %q, alloc db[1] holding data[1]) = %v\nwant a conflict saying the group was run again, and the failed release, not that it is stopped", infos[0].State, stopErr)
			}
		})
	}
}

// TestGroupStopBesideAPurgeSucceeds: a stop or a purge of a group beside a purge from another
// volctl that forgets it once this one recorded it stopped (group:stopped). forgetGroup takes a
// group purged meanwhile as forgotten all the same, but the stop both run first ended by reading
// the group back, found it gone and failed "not found" (exit 1) of a group it had stopped.
func TestGroupStopBesideAPurgeSucceeds(t *testing.T) {
	for _, purge := range []bool{false, true} {
		t.Run(map[bool]string{false: "stop", true: "purge"}[purge], func(t *testing.T) {
			h := newHarness(t, nil)
			h.createDBVolumes(1)
			if _, err := h.e.RunGroup(h.ctx, dbGroup(1)); err != nil {
				t.Fatal(err)
			}
			other := h.otherProcess()
			ran := false
			h.e.failpointHook = func(name string) {
				if name != "group:stopped" || ran {
					return
				}
				ran = true
				if info, err := other.PurgeGroup(h.ctx, "db"); err != nil || !info.Purged {
					t.Errorf("the other process's purge = %+v, %v", info, err)
				}
			}
			var (
				info GroupInfo
				err  error
			)
			if purge {
				info, err = h.e.PurgeGroup(h.ctx, "db")
			} else {
				info, err = h.e.StopGroup(h.ctx, "db")
			}
			h.e.failpointHook = nil
			if !ran {
				t.Fatal("no group:stopped failpoint")
			}
			if live := h.groupLiveClaims("db"); len(live) != 0 {
				t.Fatalf("claims left: %+v", live)
			}
			if err != nil || info.State != string(store.GroupStopped) || info.Purged != purge {
				t.Errorf("stop/purge beside a purge that forgot the group = %+v, %v\nwant it to succeed, stopped (purged: %v): the group was stopped, its claims released", info, err, purge)
			}
		})
	}
}
