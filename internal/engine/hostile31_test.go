package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// eventsOf is the messages of the events of kind on volume vol (any: "") that contain text.
func (h *harness) eventsOf(kind, vol, text string) []string {
	h.t.Helper()
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: kind, VolumeID: vol})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if strings.Contains(ev.Message, text) {
			out = append(out, ev.Message)
		}
	}
	return out
}

// reconcileTimes runs n reconcile passes, each expected to report the failure left.
func (h *harness) reconcileTimes(n int) {
	h.t.Helper()
	for range n {
		if rep, err := h.e.Reconcile(h.ctx); err == nil && rep.OK() {
			h.t.Fatal("a reconcile pass with the failure left reported nothing wrong")
		}
	}
}

// A plugin whose every failure names its request (an SDK's request ID, a timestamp, a trace
// number: real drivers answer so) made each reconcile pass's failure of a claim a new one, an
// event each, where the same failure pass after pass is one event (TestRepeatedFailureIsOneEvent):
// the agent's passes, every minute or sooner while a claim is held, then pushed the rest of
// the event log (10,000 rows) out within days. The failure is one event however its numbers
// change; another failure (another code) is an event again.
func TestFailureWithAChangingRequestIDIsOneEvent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	for i := range 100 {
		h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.Unavailable, Times: 1,
			Message: fmt.Sprintf("backend busy (RequestID: %08x-3f1a-4c2e-9d%02d-5b1e2c3d4e5f, at 2026-12-01T14:%02d:%02d.%03dZ, trace %016x)", i*7919, i%100, i/60, i%60, i*37%1000, uint64(i+1)*0x9e3779b97f4a7c15)})
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("a claim whose NodeStageVolume failed was admitted")
	}
	h.reconcileTimes(5)
	if left := h.eventsOf("claim", "v", "for reconcile"); len(left) != 1 {
		t.Fatalf("%d \"left for reconcile\" events after a claim and 5 passes failing the same way, its request IDs aside; want 1:\n%s", len(left), strings.Join(left, "\n"))
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Attempts < 6 || !strings.Contains(live[0].LastError, "RequestID") {
		t.Fatalf("claims = %+v; want the claim kept, its attempts counted, its last error the plugin's", live)
	}
	h.faults.Clear(csi.RPCNodeStageVolume)
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.Unavailable, Message: "backend lost its lease (RequestID: 77)"})
	h.reconcileTimes(2)
	if left := h.eventsOf("claim", "v", "for reconcile"); len(left) != 2 {
		t.Fatalf("%d \"left for reconcile\" events after the failure changed and 2 passes; want 2:\n%s", len(left), strings.Join(left, "\n"))
	}
}

// A deleting volume whose plugin keeps failing its DeleteVolume, or answers it OK and keeps
// listing the volume, had an event recorded at every reconcile pass, the same words each time
// (a claim's failure is one event: recordFailure): a volume or two so flushed the event log.
// It is one event until something else happens to the delete; its end is recorded.
func TestDeleteFailingEveryPassIsOneEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*csitest.MemConfig)
		fail   func(*harness, int)
		text   string
		honest func(*harness)
	}{
		{name: "DeleteVolume unavailable", text: "delete failed",
			fail: func(h *harness, i int) {
				h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Code: codes.Unavailable, Times: 1, Message: fmt.Sprintf("backend busy, request %08x", 0x5b1e0000+i*7919)})
			},
			honest: func(h *harness) { h.faults.Clear(csi.RPCDeleteVolume) }},
		{name: "DeleteVolume OK, still listed", text: "delete not finished",
			mutate: func(c *csitest.MemConfig) { c.DeleteLater = true },
			fail:   func(*harness, int) {},
			honest: func(h *harness) { h.mem.DropVolume(h.externalID("v")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.mutate)
			h.create(volume("v"))
			for i := range 100 {
				tc.fail(h, i)
			}
			if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
				t.Fatal("the delete finished")
			}
			h.reconcileTimes(5)
			if evs := h.eventsOf("volume-delete", "v", tc.text); len(evs) != 1 {
				t.Fatalf("%d %q events after a delete and 5 passes failing the same way; want 1:\n%s", len(evs), tc.text, strings.Join(evs, "\n"))
			}
			tc.honest(h)
			if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
				t.Fatalf("reconcile once the plugin deletes: %+v, %v", rep, err)
			}
			if evs := h.eventsOf("volume-delete", "v", `volume "v" deleted`); len(evs) != 1 {
				t.Fatalf("the delete's end is not recorded: %v", evs)
			}
		})
	}
}

// The same for a snapshot whose plugin answers DeleteSnapshot OK and keeps listing it.
func TestSnapshotDeleteStillListedEveryPassIsOneEvent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.DeleteLater = true })
	h.create(volume("v"))
	snap, err := h.e.CreateSnapshot(h.ctx, "v", "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", snap.ID, nil); err == nil {
		t.Fatal("the delete of a snapshot the plugin still lists finished")
	}
	for range 5 {
		if err := h.e.DeleteSnapshot(h.ctx, "mem", snap.ID, nil); err == nil {
			t.Fatal("the delete of a snapshot the plugin still lists finished")
		}
		h.e.Reconcile(h.ctx)
	}
	if evs := h.eventsOf("snapshot-delete", "v", "delete not finished"); len(evs) != 1 {
		t.Fatalf("%d \"delete not finished\" events after a delete and 5 more deletes and passes; want 1:\n%s", len(evs), strings.Join(evs, "\n"))
	}
}

func TestSameFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"busy (request 7f3a90c1)", "busy (request 81c2d004)", true},
		{"busy (request 1764597600123)", "busy (request 1764597600456)", true},
		// Any other number is the failure's own (review31b): a status, an errno, an exit
		// status, an address, a host or a device named by its number.
		{"backend answered HTTP 503", "backend answered HTTP 403", false},
		{"mkfs failed: errno 28", "mkfs failed: errno 5", false},
		{"resize2fs exit status 1", "resize2fs exit status 8", false},
		{"portal 10.0.0.12:3260 unreachable", "portal 10.0.0.13:3260 unreachable", false},
		{"volume locked by host node-1", "volume locked by host node-2", false},
		{"device nvme1n1 busy", "device nvme2n1 busy", false},
		{"RequestID: 5b1e2c3d-aaaa-4c2e", "RequestID: 09f3e2d1-aaaa-4c2e", true},
		{"took 1.234s (its attempts 3.1s in all)", "took 998ms (its attempts 1m2.5s in all)", true},
		{"at 2026-12-01T14:07:00.123Z.", "at 2026-12-02T01:00:00Z.", true},
		{"NodeStageVolume: Unavailable: busy", "NodeStageVolume: Internal: busy", false},
		{"volume \"v\" busy", "volume \"w\" busy", false},
		{"busy", "busy " + strings.Repeat("x", 20<<10), false},
	} {
		if got := sameFailure(tc.a, tc.b); got != tc.same {
			t.Errorf("sameFailure(%.40q, %.40q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
	long := strings.Repeat("x", 20<<10)
	if !sameFailure(spec.Cut(long+"a", store.MaxStoredMessage), long+"a") {
		t.Error("a message past what the store keeps is not the same as itself, stored")
	}
}

// The same for a create left for reconcile (CreateVolume unavailable, its request named in
// every answer) and a node expansion owed that the node keeps failing: each pass sent the RPC
// again and recorded its failure as a new event.
func TestCreateAndNodeExpansionFailingEveryPassAreOneEvent(t *testing.T) {
	t.Parallel()
	t.Run("create", func(t *testing.T) {
		h := newHarness(t, nil)
		for i := range 100 {
			h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.Unavailable, Times: 1, Message: fmt.Sprintf("quota service busy, request %08x", 0x5b1e0000+i*7919)})
		}
		if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
			t.Fatal("the create finished")
		}
		h.reconcileTimes(5)
		if evs := h.eventsOf("volume-create", "v", "left for reconcile"); len(evs) != 1 {
			t.Fatalf("%d \"left for reconcile\" events after a create and 5 passes failing the same way; want 1:\n%s", len(evs), strings.Join(evs, "\n"))
		}
	})
	t.Run("node expansion", func(t *testing.T) {
		h := newHarness(t, nil)
		h.create(volume("v"))
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
		for i := range 100 {
			h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.Internal, Times: 1, Message: fmt.Sprintf("resize2fs exited 1 at %d.%03ds", i, i)})
		}
		if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
			t.Fatal("the expand finished")
		}
		h.reconcileTimes(5)
		if n := h.faults.Calls(csi.RPCNodeExpandVolume); n < 6 {
			t.Fatalf("NodeExpandVolume sent %d times by an expand and 5 passes: reconcile does not send it again", n)
		}
		if evs := h.eventsOf("volume-expand", "v", "still owed"); len(evs) != 1 {
			t.Fatalf("%d \"still owed\" events after an expand and 5 passes failing the same way; want 1:\n%s", len(evs), strings.Join(evs, "\n"))
		}
	})
}

// A retryable failure whose attempts all had one code but said different things (the backend
// busy, then rebooting, then the volume locked by another host) was reported as "the same at
// each of volctl's 3 attempts", quoting the last: what the first two said was lost behind a
// claim that they said it too. Attempts that differ only in a request ID are the same.
func TestRetriedOutFailureOfOneCodeButOtherWordsSaysTheLast(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		messages []string
		want     string
	}{
		{"other words", []string{"backend busy", "backend rebooting", "volume locked by host b"}, "the last of volctl's 3 attempts, the earlier ones failing otherwise"},
		{"other request IDs", []string{"backend busy (request 7f3a90c1)", "backend busy (request 81c2d004)", "backend busy (request 9d04e5f2)"}, "the same at each of volctl's 3 attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			for _, m := range tc.messages {
				h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.Unavailable, Message: m, Times: 1})
			}
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			if err == nil || !strings.Contains(err.Error(), tc.messages[2]) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("claim = %v\nwant the last attempt's failure, saying %q", err, tc.want)
			}
		})
	}
}

// A plugin whose readiness flaps at every probe (a backend half up) had every change recorded
// as an event, one per probe: the agent's probes (every 5 to 30 s) pushed the rest of the
// event log out within a day or two. Past flapChanges changes within flapWindow, one event says
// it flaps and the rest are not recorded; the plugin's row still has every reading; once the
// window has passed, a change is an event again.
func TestFlappingPluginHealthIsBoundedInTheEventLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	probe, later := h.probesOnAClock(10 * time.Second)
	for range 50 {
		probe(false)
		probe(true)
	}
	health := h.eventsSaying("plugin-health", "")
	if len(health) > flapChanges+1 {
		t.Fatalf("%d plugin-health events after 100 changes of a flapping plugin within 17 minutes; want at most %d:\n%s", len(health), flapChanges+1, strings.Join(health, "\n"))
	}
	if !strings.Contains(health[0], `plugin "mem" is flapping`) || !strings.Contains(health[0], "volctl plugin status mem") {
		t.Fatalf("newest plugin-health event = %q; want it to say the plugin flaps and where its health is shown", health[0])
	}
	later(2 * flapWindow)
	probe(false)
	if health := h.eventsSaying("plugin-health", ""); !strings.Contains(health[0], `plugin "mem" became not ready`) {
		t.Fatalf("newest plugin-health event after the window = %q; want the change recorded again", health[0])
	}
}
