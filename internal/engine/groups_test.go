package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

func dbGroup(count int) spec.Group {
	return spec.Group{Name: "db", Count: count, Volumes: []spec.VolumeRequest{
		{Name: "data", Type: "csi", Source: "data", PerAlloc: true, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
		{Name: "shared", Type: "csi", Source: "shared", ReadOnly: true, AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem},
	}}
}

// createDBVolumes creates the volumes dbGroup(count) claims: data[0] to data[count-1], and shared.
func (h *harness) createDBVolumes(count int) {
	h.t.Helper()
	for i := 0; i < count; i++ {
		h.create(volume(spec.AllocName("data", i)))
	}
	h.create(volume("shared", capab(spec.MultiNodeReaderOnly)))
}

func TestRunGroupGivesEachAllocAllItsVolumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(3)

	info, err := h.e.RunGroup(h.ctx, dbGroup(2))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Allocs) != 2 {
		t.Fatalf("allocs = %+v", info.Allocs)
	}
	for i, a := range info.Allocs {
		if a.Name != spec.AllocName("db", i) || len(a.Claims) != 2 || a.Error != "" {
			t.Fatalf("alloc %d = %+v", i, a)
		}
		if a.Claims[0].VolumeID != spec.AllocName("data", i) || a.Claims[1].Mode != "read" {
			t.Errorf("alloc %d claims = %+v", i, a.Claims)
		}
	}
	// Running it again is idempotent; scaling to 3 adds an alloc; to 1 releases two.
	if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, dbGroup(3)); err != nil {
		t.Fatal(err)
	}
	if n := len(h.liveClaims("shared")); n != 3 {
		t.Fatalf("shared readers = %d, want 3", n)
	}
	if _, err := h.e.RunGroup(h.ctx, dbGroup(1)); err != nil {
		t.Fatal(err)
	}
	if n := len(h.liveClaims("shared")); n != 1 {
		t.Fatalf("shared readers after scaling to 1 = %d", n)
	}
	gs, err := h.e.Groups(h.ctx, "db")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v %v", gs, err)
	}
	if _, err := h.e.StopGroup(h.ctx, "db"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"data[0]", "shared"} {
		if n := len(h.liveClaims(v)); n != 0 {
			t.Errorf("%s still has %d claims after stop", v, n)
		}
	}
	if _, err := h.e.StopGroup(h.ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("stop of an unknown group: %v", err)
	}
}

// TestRunGroupAllOrNothing: when an alloc's second volume cannot be claimed, the first one it
// already got is released again.
func TestRunGroupAllOrNothing(t *testing.T) {
	t.Parallel()
	// secondPublishFails creates both volumes; the first publish (data[0]) goes through, the
	// second (shared) fails with code every time.
	secondPublishFails := func(code codes.Code) func(h *harness) {
		return func(h *harness) {
			h.createDBVolumes(1)
			h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Times: 1})
			h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Code: code})
		}
	}
	for _, tt := range []struct {
		name  string
		setup func(h *harness)
		want  string
	}{
		{"missing volume", func(h *harness) { h.create(volume("data[0]")) }, `volume "shared" not found`},
		{"plugin fails", secondPublishFails(codes.Internal), "NodePublishVolume: Internal"},
		// shared's claim is left for reconcile, not rolled back: the run must release it too.
		{"plugin unavailable", secondPublishFails(codes.Unavailable), "NodePublishVolume: Unavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			tt.setup(h)
			info, err := h.e.RunGroup(h.ctx, dbGroup(1))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run = %v, want %q", err, tt.want)
			}
			if len(info.Allocs) != 1 || info.Allocs[0].Error == "" || len(info.Allocs[0].Claims) != 0 {
				t.Fatalf("alloc = %+v", info.Allocs)
			}
			if n := len(h.liveClaims("data[0]")); n != 0 {
				t.Fatalf("data[0] kept %d claim(s): an alloc gets all its volumes or none", n)
			}
			// Nor does a later reconcile give the alloc any of them.
			h.faults.Clear()
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile: %v %+v", err, rep)
			}
			for _, vol := range []string{"data[0]", "shared"} {
				if live := h.liveClaims(vol); len(live) != 0 {
					t.Errorf("after reconcile %s has claims %+v, want none for the failed alloc", vol, live)
				}
			}
		})
	}
}

func TestGroupVolumeMountDestinations(t *testing.T) {
	t.Parallel()
	g := spec.Group{Name: "web", Count: 2, Mounts: []spec.VolumeMount{
		{Volume: "data", Destination: "/srv/{alloc}/data-{index}"},
		{Volume: "other", Destination: "/x"},
	}}
	got := groupBinds(g, "data", "web[1]", 1)
	if len(got) != 1 || got[0].Destination != "/srv/web[1]/data-1" || got[0].PropagationMode != spec.PropagationPrivate {
		t.Fatalf("binds = %+v", got)
	}
	if allocIndex("web", "web[12]") != 12 || allocIndex("web", "web[x]") != -1 || allocIndex("web", "db[1]") != -1 {
		t.Error("allocIndex")
	}
}

// TestRunGroupAgainKeepsClaimsAllocsAlreadyHeld: running a group again while one of an alloc's
// volumes is held degraded (its restore failing after a reboot) reports it, but must not release
// the alloc's other claims, which it held before this run and may be using: all-or-nothing
// undoes only what this run took.
func TestRunGroupAgainKeepsClaimsAllocsAlreadyHeld(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(1)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(1)); err != nil {
		t.Fatal(err)
	}
	shared := h.liveClaims("shared")[0]
	st, _ := h.staging("shared")
	h.mounts.markGone(shared.TargetPath)
	h.mounts.markGone(st.StagingPath)
	h.faults.FailAlways(csi.RPCNodeStageVolume, codes.Internal)
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("reconcile with NodeStageVolume failing reported success")
	}

	_, err := h.e.RunGroup(h.ctx, dbGroup(1))
	if err == nil || !strings.Contains(err.Error(), "degraded") {
		t.Fatalf("run again with shared degraded = %v; want an error saying it is held degraded", err)
	}
	if live := h.liveClaims("data[0]"); len(live) != 1 || live[0].Releasing {
		t.Fatalf("data[0] after running the group again = %+v; want the alloc's claim it held kept", live)
	}
	if live := h.liveClaims("shared"); len(live) != 1 || live[0].Releasing || !live[0].Degraded {
		t.Fatalf("shared after running the group again = %+v; want it held, degraded", live)
	}
}

// TestRunGroupInterruptedUndoesNothingAndSaysSo: a group run interrupted (Ctrl-C) while its
// first alloc's second claim is held at the plugin undoes nothing, as an interrupted claim is
// not rolled back: it sends no release, runs no further alloc and no scale-down, shows the
// alloc with the claims it holds (not "claims": [] while it holds two), and says what finishes
// the group and what undoes it. Releasing with the cancelled context had failed at once, the
// claim left for reconcile was not even seen (read with that context), and every later alloc
// and the scale-down failed in turn.
func TestRunGroupInterruptedUndoesNothingAndSaysSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(2)
	gate := make(chan struct{})
	defer close(gate)
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Times: 1})
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Gate: gate, Times: 1})
	r := h.runGroupInterruptedAt(dbGroup(2), gate, h.faults.ResetCounts)
	if r.err == nil || !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "alloc db[1] was not run") ||
		!strings.Contains(r.err.Error(), "`volctl group stop db`") || strings.Contains(r.err.Error(), "scaling down") {
		t.Fatalf("interrupted run = %v; want the interrupt, the allocs not run, and group stop named, no scale-down tried", r.err)
	}
	if len(r.info.Allocs) != 1 || r.info.Allocs[0].Error == "" {
		t.Fatalf("allocs = %+v, want the interrupted first one only, with its error", r.info.Allocs)
	}
	var held []string
	for _, c := range r.info.Allocs[0].Claims {
		held = append(held, c.VolumeID)
	}
	if !slices.Equal(held, []string{"data[0]", "shared"}) {
		t.Errorf("the interrupted alloc shows claims on %q, want the two it holds, data[0] and shared", held)
	}
	for _, vol := range []string{"data[0]", "shared"} {
		if n := len(h.liveClaims(vol)); n != 1 {
			t.Errorf("%s has %d live claims after the interrupt, want db[0]'s, kept", vol, n)
		}
	}
	if n := len(h.liveClaims("data[1]")); n != 0 {
		t.Errorf("data[1] has %d claims: an alloc was run after the interrupt", n)
	}
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCNodeStageVolume} {
		if n := h.faults.Calls(rpc); n != 0 {
			t.Errorf("%s sent %d times after the interrupt, want none", rpc, n)
		}
	}
}

// groupRun is what a RunGroup returned.
type groupRun struct {
	info GroupInfo
	err  error
}

// runGroupInterruptedAt runs g until an RPC is held at gate (a fault injected with it), calls
// before (nil: nothing), interrupts the run (Ctrl-C) and returns what the run returned.
func (h *harness) runGroupInterruptedAt(g spec.Group, gate chan struct{}, before func()) groupRun {
	h.t.Helper()
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	res := make(chan groupRun, 1)
	done := make(chan error, 1)
	go func() {
		info, err := h.e.RunGroup(ctx, g)
		res <- groupRun{info, err}
		done <- err
	}()
	h.waitInFlight(gate, done)
	if before != nil {
		before()
	}
	cancel()
	return <-res
}
