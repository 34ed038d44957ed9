package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A volume registered with no capacity (its plugin reports none at registration) has no size
// recorded. A create of it again with a capacity_min, a registration again with one, or a
// `volume expand` sent ControllerExpandVolume and said "expanded", of a volume its plugin may
// have had at that size all along: grown by nothing. The plugin is asked first where it can say
// (ListVolumes, ControllerGetVolume): at the size or more, nothing is sent, the size listed is
// recorded and the outcome is Measured; below it, the expansion is one from the size listed
// (Expanded); where it cannot say, ControllerExpandVolume is sent and the outcome is Sized,
// whose words say it may have had the size already.
func TestCapacityMinOfAVolumeOfUnknownSizeIsNotSaidToExpandIt(t *testing.T) {
	t.Parallel()
	const mib = int64(1 << 20)
	tests := []struct {
		name     string
		mutate   func(*csitest.MemConfig)
		has      int64 // the size the plugin holds the volume at
		asked    int64
		want     SubmitOutcome
		wantRPC  bool  // ControllerExpandVolume sent
		wantSize int64 // recorded after
		event    string
	}{
		{name: "listed at the size asked", has: 4 * mib, asked: 4 * mib, want: Measured, wantSize: 4 * mib,
			event: `volume "db" is 4MiB as plugin "mem" lists it, at least the 4MiB asked: its size was not known before, and it was not grown (ControllerExpandVolume not sent)`},
		{name: "listed above the size asked", has: 8 * mib, asked: 4 * mib, want: Measured, wantSize: 8 * mib,
			event: `volume "db" is 8MiB as plugin "mem" lists it, at least the 4MiB asked`},
		{name: "listed below the size asked", has: 2 * mib, asked: 4 * mib, want: Expanded, wantRPC: true, wantSize: 4 * mib,
			event: `volume "db" expanded to 4MiB`},
		{name: "got, not listed", has: 4 * mib, asked: 4 * mib, want: Measured, wantSize: 4 * mib,
			mutate: func(c *csitest.MemConfig) { c.Controller.ListVolumes = false; c.Controller.GetVolume = true },
			event:  `volume "db" is 4MiB as plugin "mem" lists it`},
		{name: "neither listed nor got", has: 4 * mib, asked: 4 * mib, want: Sized, wantRPC: true, wantSize: 4 * mib,
			mutate: func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, false },
			event:  `volume "db" is 4MiB now, at least the 4MiB asked (its size was not known before, nor listed by plugin "mem": it may have had that already)`},
	}
	for _, tt := range tests {
		for _, how := range []string{"create", "register", "expand"} {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, tt.mutate)
				h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: tt.has})
				if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 0)); err != nil {
					t.Fatal(err)
				}
				if v := h.volumeInfo("db"); v.CapacityBytes != 0 || v.RequestedMin != 0 {
					t.Fatalf("registered with a size: capacity %d, capacity_min %d", v.CapacityBytes, v.RequestedMin)
				}
				h.mem.ResetCalls()
				var (
					got SubmitOutcome
					v   VolumeInfo
					err error
				)
				switch how {
				case "create":
					sv := regSpec("db", tt.asked)
					sv.ExternalID = ""
					v, got, err = h.e.CreateVolumeOutcome(h.ctx, sv)
				case "register":
					var r Registration
					v, r, err = h.e.RegisterVolumeOutcome(h.ctx, regSpec("db", tt.asked))
					got = r.Outcome
				case "expand":
					_, v, got, err = h.e.ExpandVolumeFrom(h.ctx, "db", tt.asked, 0)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Errorf("outcome %v, want %v", got, tt.want)
				}
				if sent := h.mem.CallCount(csi.RPCControllerExpandVolume) > 0; sent != tt.wantRPC {
					t.Errorf("ControllerExpandVolume sent: %v, want %v (RPCs %v)", sent, tt.wantRPC, h.rpcs())
				}
				if v.CapacityBytes != tt.wantSize || v.RequestedMin != tt.asked {
					t.Errorf("recorded capacity %d, capacity_min %d; want %d, %d", v.CapacityBytes, v.RequestedMin, tt.wantSize, tt.asked)
				}
				if evs := h.eventsOf("volume-expand", "db", ""); len(evs) != 1 || !strings.HasPrefix(evs[0], tt.event) {
					t.Errorf("expand events %q, want one beginning %q", evs, tt.event)
				}
				if pv, _ := h.mem.Volume("ext-db"); tt.want == Measured && pv.CapacityBytes != tt.has {
					t.Errorf("the plugin's volume is %d now, want it untouched at %d", pv.CapacityBytes, tt.has)
				}
			})
		}
	}
}

// A volume of no recorded size that its plugin lists above the limit asked (an expand's
// --limit, a spec's capacity_max) cannot be made that: the expand fails as one to shrink it
// does (invalid), nothing is sent, and the size learnt is recorded without the request.
func TestAVolumeOfUnknownSizeListedAboveTheLimitIsNotSaidToMeetIt(t *testing.T) {
	t.Parallel()
	const mib = int64(1 << 20)
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 8 * mib})
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 0)); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := h.e.ExpandVolumeFrom(h.ctx, "db", 4*mib, 6*mib)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `volume "db" is 8MiB as plugin "mem" lists it, above the limit 6MiB asked: volumes cannot shrink`) {
		t.Errorf("expand to 4MiB with a limit of 6MiB of a volume listed at 8MiB: %v, want it refused as invalid, saying why", err)
	}
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
		t.Errorf("ControllerExpandVolume sent %d times", n)
	}
	if v := h.volumeInfo("db"); v.CapacityBytes != 8*mib || v.RequestedMin != 0 || v.RequestedMax != 0 {
		t.Errorf("recorded capacity %d, capacity_min %d, capacity_max %d; want the size listed and no request", v.CapacityBytes, v.RequestedMin, v.RequestedMax)
	}
}

// A volume of no recorded size with an expansion pending (its ControllerExpandVolume's answer
// lost before volctl recorded any size) is not taken as met when its plugin lists it at the
// size: that answer may have said the node must expand too, so reconcile's replay owes the
// published claim its NodeExpandVolume, as after any lost answer, and clears the pending mark.
// Looked up as a volume of unknown size is (learntSize), it was left pending, the node never
// expanded.
func TestPendingExpansionOfAVolumeOfUnknownSizeStillOwesTheNode(t *testing.T) {
	t.Parallel()
	const mib = int64(1 << 20)
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 4 * mib}) // grown by the lost call
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 0)); err != nil {
		t.Fatal(err)
	}
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	h.update(func(tx *store.Tx) error { return tx.Volumes().SetExpansionIntent("db", 4*mib, 0) })
	h.mem.ResetCalls()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
		t.Errorf("ControllerExpandVolume sent %d times to a volume listed at the size pending", n)
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 1 {
		t.Errorf("NodeExpandVolume sent %d times, want once: the lost answer may have asked for it (RPCs %v)", n, h.rpcs())
	}
	if v := h.volumeInfo("db"); v.CapacityBytes != 4*mib || v.ExpansionPending != 0 || v.NodeExpansionOwed != 0 {
		t.Errorf("after reconcile: capacity %d, pending %d, node expansion owed %d; want %d, none, none", v.CapacityBytes, v.ExpansionPending, v.NodeExpansionOwed, 4*mib)
	}
}
