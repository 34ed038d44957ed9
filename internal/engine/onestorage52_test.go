package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// recordTwice records volume v's storage again as volume id through plugin, in the store, as an
// older volctl or two plugin IDs on sockets of their own (since joined) would have left it.
func (h *harness) recordTwice(v, id, plugin string) {
	h.t.Helper()
	w := store.VolumeFromSpec(registered(id, h.externalID(v)))
	w.PluginID, w.State = plugin, store.VolumeReady
	h.update(func(tx *store.Tx) error { return tx.Volumes().Insert(&w) })
}

// wantStorageRefusal checks that err refuses a claim of volume vol as a conflict because volume
// other records its storage too, saying why (held says by what) and naming both deregisters.
func wantStorageRefusal(t *testing.T, err error, vol, other, held string) {
	t.Helper()
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("claim, handover or expand of %q while %q, the same storage, is held: %v; want a conflict", vol, other, err)
	}
	for _, want := range []string{`volume "` + other + `"`, held, "one storage under two volume IDs",
		"`volctl volume deregister " + vol + "`", "`volctl volume deregister " + other + "`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %s", err, want)
		}
	}
}

// One storage recorded as volumes v and w through plugin IDs on one socket (one process): a
// claim of either is refused while the other holds the storage, by a claim or by a staging
// left with no claim, or by a handover to Nomad, naming the holder and how to forget one
// record; nothing is sent to the
// plugin for it. Before, each volume's claims were admitted against its own alone: w's writer
// was admitted beside v's (single-node-writer both), and only the plugin's refusal of a second
// staging (which many plugins do not make) stood between them and two writers.
func TestClaimOfOneStorageRecordedTwiceIsRefused(t *testing.T) {
	t.Parallel()
	t.Run("claimed", func(t *testing.T) {
		h := newHarness(t, nil)
		h.registerPlugin("mem3", h.socket)
		h.create(volume("v"))
		h.recordTwice("v", "w", "mem3")
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
		// What `volume status` shows of each (its Same Storage row, same_storage).
		for vol, want := range map[string]string{"v": "w (plugin mem3)", "w": "v (plugin mem)"} {
			if got := h.volumeInfo(vol).SameStorage; !slices.Equal(got, []string{want}) {
				t.Errorf("volume %q's SameStorage = %q, want [%q]", vol, got, want)
			}
		}
		h.mem.ResetCalls()
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
		wantStorageRefusal(t, err, "w", "v", `alloc "a" (write claim, published)`)
		if rpcs := h.rpcs(); len(rpcs) > 0 {
			t.Errorf("RPCs sent for the refused claim: %v, want none", rpcs)
		}
		if live := h.liveClaims("w"); len(live) != 0 {
			t.Errorf("w's claims after the refusal: %+v, want none", live)
		}
		// A reader is refused too: v's access mode is v's claims' alone to judge.
		_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b", ReadOnly: true})
		wantStorageRefusal(t, err, "w", "v", `alloc "a"`)

		h.release("v", "a")
		h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
		_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "c"})
		wantStorageRefusal(t, err, "v", "w", `alloc "b"`)
		h.release("w", "b")
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "c"})
	})
	t.Run("staged with no claim", func(t *testing.T) {
		h := newHarness(t, nil)
		h.registerPlugin("mem3", h.socket)
		h.leaveStagedWithoutClaim("v")
		h.recordTwice("v", "w", "mem3")
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
		wantStorageRefusal(t, err, "w", "v", "still staged or attached on this node")
		if _, err := h.e.Reconcile(h.ctx); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
	})
	t.Run("handed over to Nomad", func(t *testing.T) {
		h := newHarness(t, nil)
		h.registerPlugin("mem3", h.socket)
		h.create(volume("v"))
		h.recordTwice("v", "w", "mem3")
		h.update(func(tx *store.Tx) error {
			return tx.Handovers().Put(&store.Handover{VolumeID: "v", Address: "http://127.0.0.1:4646", Region: "global", Namespace: "default"})
		})
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
		wantStorageRefusal(t, err, "w", "v", "handed over to Nomad")
	})
	t.Run("another plugin's storage", func(t *testing.T) {
		// Another plugin process of the same driver, on a socket of its own, is another
		// storage (anotherPluginsSocket): its db2 has the external ID of mem's v, as
		// sequential IDs give, and its claims are not judged with v's.
		h := newHarness(t, nil)
		_, _, ext2 := h.anotherPluginsSocket()
		if ext := h.create(volume("v")).ExternalID; ext != ext2 {
			t.Fatalf("v's external ID %q, db2's %q: want one (the test's premise)", ext, ext2)
		}
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
		h.claim(ClaimRequest{VolumeID: "db2", Alloc: "b"})
		for _, vol := range []string{"v", "db2"} {
			if got := h.volumeInfo(vol).SameStorage; len(got) > 0 {
				t.Errorf("volume %q's SameStorage = %q, want none: another process's storage", vol, got)
			}
		}
	})
}

// Plugin mem2, registered on a socket of its own, records volume w on the storage mem's volume
// v records (the same process serves both sockets): registering mem2 again on mem's socket
// would make them one process's, one storage under two IDs, and is refused, naming both
// volumes and how to forget one; mem2 stays registered as it was. Before, it said "socket
// changed" and the two records stayed.
func TestPluginMovedOntoASocketWhoseVolumesItRecordsIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	socket2, _ := h.recordedThroughASecondSocket()
	_, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem2", Type: spec.PluginMonolith, Socket: h.socket})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("register mem2 on mem's socket: %v, want a conflict", err)
	}
	for _, want := range []string{`plugin "mem2"`, `plugin "mem"`, `volume "w"`, `volume "v"`, "nothing was recorded",
		"`volctl volume deregister w`", "`volctl volume deregister v`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %s", err, want)
		}
	}
	if p := h.storedPlugin("mem2"); p.Socket != socket2 {
		t.Errorf("mem2's socket after the refusal: %q, want %q as it was", p.Socket, socket2)
	}
	// Registered again as it is, it is not refused; and once w is forgotten, the move is not.
	h.registerPlugin("mem2", socket2)
	if _, err := h.e.DeregisterVolume(h.ctx, "w", false); err != nil {
		t.Fatal(err)
	}
	h.registerPlugin("mem2", h.socket)
}

// The same storage recorded as v and w through plugin IDs on one socket: handing w over to Nomad
// while v is claimed here, or while v is handed over already, is refused as a claim of w is, so
// Nomad's claims and volctl's, or two Nomad volumes, do not share one storage unseen; --force
// hands it over anyway, as it does a volume with live claims.
func TestHandOverOfOneStorageRecordedTwiceIsRefused(t *testing.T) {
	t.Parallel()
	to := HandoverTarget{Address: "http://127.0.0.1:4646", Region: "global", Namespace: "default"}
	h := newHarness(t, nil)
	h.registerPlugin("mem3", h.socket)
	h.create(volume("v"))
	h.recordTwice("v", "w", "mem3")
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	_, err := h.e.HandOver(h.ctx, "w", to, false, nil)
	wantStorageRefusal(t, err, "w", "v", `alloc "a"`)
	if err != nil && !strings.Contains(err.Error(), "--force") {
		t.Errorf("err = %v\nwant it to name --force", err)
	}
	if h.handedOver("w") {
		t.Fatal("w is marked handed over after the refusal")
	}
	h.release("v", "a")
	if _, err := h.e.HandOver(h.ctx, "v", to, false, nil); err != nil {
		t.Fatalf("hand v over, w unclaimed: %v", err)
	}
	_, err = h.e.HandOver(h.ctx, "w", to, false, nil)
	wantStorageRefusal(t, err, "w", "v", "handed over to Nomad")
	if _, err := h.e.HandOver(h.ctx, "w", to, true, nil); err != nil || !h.handedOver("w") {
		t.Errorf("hand w over with --force: %v (marked %v), want it marked", err, h.handedOver("w"))
	}
}

// The same storage recorded as v and w through plugin IDs on one socket, v claimed: expanding w
// is refused as a claim of it is, naming v's claim; grown through w, the new size and the node
// expansion owed would be w's, and v's mount left at the old size with nothing owed to it.
// Once v is released, w grows.
func TestExpandOfOneStorageRecordedTwiceIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = true, true })
	h.registerPlugin("mem3", h.socket)
	h.create(volume("v"))
	h.recordTwice("v", "w", "mem3")
	h.update(func(tx *store.Tx) error {
		w, err := tx.Volumes().Get("w")
		if err != nil {
			return err
		}
		w.CapacityBytes = h.volumeInfo("v").CapacityBytes
		return tx.Volumes().Update(&w)
	})
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.mem.ResetCalls()
	_, err := h.e.ExpandVolume(h.ctx, "w", 8<<20, 0)
	wantStorageRefusal(t, err, "w", "v", `alloc "a"`)
	if rpcs := h.rpcs(); len(rpcs) > 0 {
		t.Errorf("RPCs sent for the refused expand: %v, want none", rpcs)
	}
	h.release("v", "a")
	if _, err := h.e.ExpandVolume(h.ctx, "w", 8<<20, 0); err != nil {
		t.Errorf("expand of w once v is released: %v", err)
	}
}

// Two processes claim the two records of one storage at once, for writers, again and again:
// each admission reads the other record's claims in its own write transaction, which SQLite
// serialises, so exactly one of the two is admitted each round and the other is refused
// naming it. A check read outside the admission's transaction would let both through now and
// then.
func TestClaimsOfOneStorageRecordedTwiceAtOnceAdmitOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.registerPlugin("mem3", h.socket)
	h.create(volume("v"))
	h.recordTwice("v", "w", "mem3")
	other := h.otherProcess()
	for round := range 20 {
		errs := make(chan error, 2)
		go func() { _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); errs <- err }()
		go func() { _, err := other.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"}); errs <- err }()
		var admitted, refused int
		for range 2 {
			switch err := <-errs; {
			case err == nil:
				admitted++
			case errors.Is(err, ErrConflict) && strings.Contains(err.Error(), "one storage under two volume IDs"):
				refused++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if admitted != 1 || refused != 1 {
			t.Fatalf("round %d: %d claims admitted, %d refused; want one of each", round, admitted, refused)
		}
		for _, vol := range []string{"v", "w"} {
			for _, c := range h.liveClaims(vol) {
				h.release(vol, c.Alloc)
			}
		}
	}
}
