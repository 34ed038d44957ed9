package engine

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// review31b: a plugin that flaps for a few minutes (3 restarts' worth: 6 changes and more),
// then settles for good in the state opposite to the one the "is flapping" event named. Its
// settling is a change of health; it is never recorded: the newest plugin-health event (which
// `volctl events`, the TUI's event view and anyone following the log read) says the opposite of
// `plugin status` for hours, for ever if the plugin stays as it is.
func TestFlappingPluginThenSettledIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	probe, _ := h.probesOnAClock(30 * time.Second)
	// Flap: 5 down/up pairs in 5 minutes.
	for range 5 {
		probe(false)
		probe(true)
	}
	// It settles in the state the newest recorded event does not say.
	final, word := h.unrecordedHealth()
	// ... and stays so for three hours of the agent's probes (every 30 s).
	for range 360 {
		probe(final)
	}
	health := h.eventsSaying("plugin-health", "")
	if !strings.HasPrefix(lastChange(health[0]), word) {
		t.Fatalf("the plugin settled %q three hours ago and `plugin status` says so, but the newest plugin-health event is %q\nall:\n%s",
			word, health[0], strings.Join(health, "\n"))
	}
}

// review31b: two snapshots of one volume, named by their date as scheduled snapshots are, both
// left for reconcile by a plugin busy at the time. The second one's CreateSnapshot failure is a
// failure of another snapshot, but its words differ from the first's only in the date (a word
// holding digits), so sameFailure takes it for the first one's and it is never recorded: the
// event log names one snapshot pending, the other is not there.
func TestAnotherSnapshotsCreateFailureIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Code: codes.Unavailable, Message: "backend busy"})
	for _, name := range []string{"nightly-20261201", "nightly-20261202"} {
		if _, err := h.e.CreateSnapshot(h.ctx, "v", name, nil); err == nil {
			t.Fatalf("snapshot %s: created while the plugin fails CreateSnapshot", name)
		}
	}
	for _, name := range []string{"nightly-20261201", "nightly-20261202"} {
		if evs := h.eventsOf("snapshot-create", "v", `snapshot "`+name+`" left for reconcile`); len(evs) == 0 {
			t.Errorf("no event says snapshot %q was left for reconcile; snapshot-create events:\n%s", name,
				strings.Join(h.eventsOf("snapshot-create", "", ""), "\n"))
		}
	}
}

// review31b: the same for two snapshots of one volume whose deletes the plugin answers OK and
// keeps listing: the second snapshot's "delete not finished, snapshot kept" is taken for the
// first one's (their IDs hold digits) and never recorded.
func TestAnotherSnapshotsStuckDeleteIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.DeleteLater = true })
	h.create(volume("v"))
	var ids []string
	for _, name := range []string{"nightly-20261201", "nightly-20261202"} {
		snap, err := h.e.CreateSnapshot(h.ctx, "v", name, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, snap.ID)
	}
	for _, id := range ids {
		if err := h.e.DeleteSnapshot(h.ctx, "mem", id, nil); err == nil {
			t.Fatalf("the delete of snapshot %s, which the plugin still lists, finished", id)
		}
	}
	for _, id := range ids {
		if evs := h.eventsOf("snapshot-delete", "v", id); len(evs) == 0 {
			t.Errorf("no event names snapshot %q, kept because the plugin still lists it; snapshot-delete events:\n%s", id,
				strings.Join(h.eventsOf("snapshot-delete", "", ""), "\n"))
		}
	}
}

// lastChange is the change a plugin-health event records: from its last "became".
func lastChange(msg string) string { return msg[strings.LastIndex(msg, "became "):] }

// probesOnAClock reopens h's engine on a clock the test moves and returns probe, which makes
// the plugin ready or not, moves the clock by step and reads `plugin status`, which must say
// so, and later, which moves the clock on.
func (h *harness) probesOnAClock(step time.Duration) (probe func(ready bool), later func(time.Duration)) {
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	h.open(Config{Now: func() time.Time { return now }})
	probe = func(ready bool) {
		h.t.Helper()
		h.mem.SetReady(&ready)
		now = now.Add(step)
		infos, err := h.e.PluginStatus(h.ctx, "mem")
		if err != nil || len(infos) != 1 || infos[0].Ready != ready {
			h.t.Fatalf("plugin status = %+v, %v; want it read as ready %v", infos, err, ready)
		}
	}
	return probe, func(d time.Duration) { now = now.Add(d) }
}

// unrecordedHealth is the readiness the plugin's newest health event does not say, and the
// change that would say it.
func (h *harness) unrecordedHealth() (ready bool, word string) {
	h.t.Helper()
	if strings.HasPrefix(lastChange(h.eventsSaying("plugin-health", "")[0]), "became healthy") {
		return false, "became not ready"
	}
	return true, "became healthy"
}

// review31b: a deleting volume whose plugin alternates between two failures (an overloaded
// backend: busy at one pass, an operation pending at the next) is still an event per pass:
// appendFailure compares with the newest event only, so the "one stuck volume cannot push the
// rest of the log out" of architecture.md's Bounds does not hold for it.
func TestDeleteAlternatingTwoFailuresIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	for i := range 40 {
		code := codes.Unavailable
		if i%2 == 1 {
			code = codes.Aborted
		}
		h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Code: code, Times: fastRetry.Attempts, Message: "backend busy"})
	}
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		t.Fatal("the delete finished")
	}
	h.reconcileTimes(19)
	if evs := h.eventsOf("volume-delete", "v", "delete failed"); len(evs) > 4 {
		t.Fatalf("%d \"delete failed\" events after a delete and 19 passes meeting the same two failures in turn; want a bound:\n%s",
			len(evs), strings.Join(evs[:4], "\n"))
	}
}

// review31b: a create left for reconcile, given up (`volume deregister --force` while the plugin
// keeps refusing), and days later a new create of a volume with the same ID (Nomad's IDs are reused)
// that the plugin refuses the same way: appendFailure has no bound in time and finds the old
// create's failure the newest volume-create event of the volume, so the new create's failure
// is not recorded at all.
func TestNewCreateOfAReusedIDIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.Unavailable, Message: "quota service busy"})
	if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
		t.Fatal("the create finished")
	}
	err := h.e.DeleteVolume(h.ctx, "v")
	t.Logf("delete of the pending create: %v", err)
	if _, err := h.e.DeregisterVolume(h.ctx, "v", true); err != nil {
		t.Logf("deregister --force of the pending create: %v", err)
	}
	if vols, _ := h.e.Volumes(h.ctx); len(vols) != 0 {
		t.Skipf("the pending create is not forgotten by a delete while the plugin refuses: %+v", vols)
	}
	before := len(h.eventsOf("volume-create", "v", "left for reconcile"))
	if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
		t.Fatal("the create finished")
	}
	if evs := h.eventsOf("volume-create", "v", "left for reconcile"); len(evs) == before {
		t.Fatalf("the new create of volume v, left for reconcile, is not recorded; the volume's events:\n%s", strings.Join(h.eventsOf("", "v", ""), "\n"))
	}
}

// review31b: a deleting volume whose plugin (a REST backend's driver mapping every answer to
// INTERNAL, as many do) fails DeleteVolume with the backend's HTTP status: 503 (busy: wait)
// for a few passes, then 403 (its credentials were revoked: the user must act). The words
// differ only in the status, a word holding digits: the change is never an event.
func TestFailureChangingOnlyItsStatusNumberIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Code: codes.Internal, Times: 3, Message: "backend answered HTTP 503"})
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		t.Fatal("the delete finished")
	}
	h.reconcileTimes(2)
	h.faults.Clear(csi.RPCDeleteVolume)
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Code: codes.Internal, Message: "backend answered HTTP 403"})
	h.reconcileTimes(1)
	if evs := h.eventsOf("volume-delete", "v", "HTTP 403"); len(evs) == 0 {
		t.Fatalf("the delete's failure turned from HTTP 503 to HTTP 403 and no event says so; volume-delete events:\n%s",
			strings.Join(h.eventsOf("volume-delete", "v", ""), "\n"))
	}
}

// review31b: b0fbec92 says attempts are "the same at each" only when a request ID or a
// timestamp differs; attempts naming three different hosts holding the volume's lock (words
// holding digits) are still "the same at each of volctl's 3 attempts", the first two hosts
// claimed to be the third.
func TestRetriedOutOtherHostsSaysTheLast(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	for _, m := range []string{"volume locked by host node-1", "volume locked by host node-2", "volume locked by host node-3"} {
		h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.Unavailable, Message: m, Times: 1})
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || strings.Contains(err.Error(), "the same at each") {
		t.Fatalf("claim = %v\nwant the last attempt's failure, not said to be each attempt's: they named three hosts", err)
	}
}

// review31b: a plugin that flapped, deregistered and registered again under its ID within the
// hour: its first reading is a change of health like any other to appendHealthEvent, which
// withheld it as one more change of a flapping plugin; health unchanged since, nothing ever
// recorded it. A first reading is always recorded.
func TestReRegisteredPluginsFirstReadingIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	probe, _ := h.probesOnAClock(30 * time.Second)
	for range 5 {
		probe(false)
		probe(true)
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem", false); err != nil {
		t.Fatal(err)
	}
	// It comes back in the state the newest recorded event does not say.
	final, word := h.unrecordedHealth()
	h.mem.SetReady(&final)
	h.registerPlugin("mem", h.socket)
	probe(final)
	if health := h.eventsSaying("plugin-health", ""); !strings.HasPrefix(lastChange(health[0]), word) {
		t.Fatalf("plugin mem registered again, %s; the newest plugin-health event is %q\nall:\n%s", word, health[0], strings.Join(health, "\n"))
	}
}

// review31b: an expansion whose answer volctl did not read, to 4 MiB, then one to 8 MiB: the
// second is another expansion, its size asked being volctl's own words, not the plugin's.
func TestAnotherExpansionsUnreadAnswerIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Code: codes.Unavailable, Message: "resize queue full"})
	for _, size := range []int64{4 * mib, 8 * mib} {
		if _, err := h.e.ExpandVolume(h.ctx, "v", size, 0); err == nil {
			t.Fatalf("the expand to %d finished", size)
		}
	}
	for _, size := range []string{"4MiB", "8MiB"} {
		if evs := h.eventsOf("volume-expand", "v", "the expansion to "+size+" pending"); len(evs) == 0 {
			t.Errorf("no event says the expansion to %s was not read; volume-expand events:\n%s", size, h.expandEvents("v"))
		}
	}
}

// review31b: a node expansion owed at two allocs' paths (a volume published for two allocs,
// the first released while the node's expansion fails): the failure at the second path is
// another one, not the first's. Each path is sent its own NodeExpandVolume since round 68
// (TestNodeExpandFailingForOneClaimStillSendsItToTheOthers), so both fail at the expand: each
// is recorded once however many passes fail it again, and web-1's once more after the release,
// another event between (appendFailure's walk stops at one).
func TestNodeExpansionOwedAtAnotherPathIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0", AccessMode: spec.MultiNodeMultiWriter})
	b := h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-1", AccessMode: spec.MultiNodeMultiWriter})
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.Internal, Message: "resize2fs exited 1"})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("the expand finished")
	}
	h.reconcileTimes(2)
	count := func(cl ClaimInfo, want int) {
		t.Helper()
		if evs := h.eventsOf("volume-expand", "v", "at "+cl.TargetPath+" failed"); len(evs) != want {
			t.Errorf("%d events say the node expansion at %s is owed; want %d; volume-expand events:\n%s", len(evs), cl.TargetPath, want, h.expandEvents("v"))
		}
	}
	count(a, 1)
	count(b, 1)
	h.release("v", "web-0")
	h.reconcileTimes(2)
	count(a, 1)
	count(b, 2)
}

// review31b: snapshots volctl has no record of (taken by the backend's own schedule, named by
// date), deleted through volctl and still listed by the plugin: their events name no volume,
// and the newest snapshot-delete event of the plugin on any volume was taken for each one's.
func TestAnotherUnrecordedSnapshotsStuckDeleteIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.DeleteLater = true })
	ids := []string{"nightly-20261201", "nightly-20261202"}
	for _, id := range ids {
		h.mem.AddSnapshot(csi.Snapshot{ID: id, SourceVolumeID: "backend-vol-7", SizeBytes: mib, ReadyToUse: true})
	}
	for _, id := range ids {
		if err := h.e.DeleteSnapshot(h.ctx, "mem", id, nil); err == nil {
			t.Fatalf("the delete of snapshot %s, which the plugin still lists, finished", id)
		}
	}
	for _, id := range ids {
		if evs := h.eventsOf("snapshot-delete", "", id); len(evs) == 0 {
			t.Errorf("no event names snapshot %q, kept because the plugin still lists it; snapshot-delete events:\n%s", id,
				strings.Join(h.eventsOf("snapshot-delete", "", ""), "\n"))
		}
	}
}
