package engine

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// The wall clock steps back (NTP correcting a clock that ran an hour fast, or a date set by
// hand) while a restore's pass runs: after the pass indexed the publish tree, and before another
// command makes alloc b's publish directory. That directory's birth time, the kernel's wall clock
// after the step, is then an hour before the index's build time, so it looked born before the
// index, as if indexed and not there: the index was not walked again, and the pass published v,
// which a staging plugin bound from alloc b's directory, handing alloc a a directory of volctl's
// state dir (TestRestoreIndexSeesADirectoryMadeSinceItWasBuilt without the step). The engine's
// clock (Config.Now) reads the wall clock as it was before the step for the build, and as it
// is after for the rest.
func TestRestoreIndexSeesADirectoryMadeSinceItWasBuiltAfterTheClockSteppedBack(t *testing.T) {
	t.Parallel()
	from := func(dir string) string { return filepath.Join(dir, "publish", "b") }
	h := wrongBindHarness(t, true, from, nil)
	var stepped atomic.Bool
	h.e.cfg.Now = func() time.Time {
		if stepped.Load() {
			return time.Now()
		}
		return time.Now().Add(time.Hour) // the wall clock an hour fast, until it is stepped back
	}
	capability := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	for _, id := range []string{"x", "w", "v"} {
		h.create(volume(id, capability))
	}
	pass := withPublishIndex(h.ctx)
	if _, err := h.e.Claim(pass, ClaimRequest{VolumeID: "x", Alloc: "c"}); err != nil { // the pass's first check builds the index
		t.Fatal(err)
	}
	defer h.release("x", "c")
	stepped.Store(true)
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"}) // another command, outside the pass, after the step
	defer h.release("w", "b")
	cl, err := h.e.Claim(pass, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		entries, _ := os.ReadDir(cl.TargetPath)
		t.Fatalf("claim of v published at %s, a bind of %s (what the alloc sees there: %v), want it refused", cl.TargetPath, from(h.dir), entries)
	}
	if want := "a bind mount of " + from(h.dir) + ", a directory of volctl's state dir"; !strings.Contains(err.Error(), want) {
		t.Fatalf("claim = %v\nwant an error saying %s", err, want)
	}
}

// chaos33: a plugin flaps for a few minutes (its changes past flapChanges left unrecorded, as
// appendHealthEvent bounds them), and then the wall clock steps back a day (NTP correcting a
// clock a VM resumed with, or an RTC set wrong) and the plugin settles in the state the newest
// event does not say. The flapping rule measured the hour since its sixth newest change on the
// wall clock: stamped a day ahead of the clock now, those changes looked younger than the hour
// for a day and an hour, and the settling (a change no probe records while the plugin flaps)
// was not recorded for all that time: `volctl events` and the dashboard's event view said the
// opposite of `volctl plugin status`. A change dated after now is not counted as within the
// window: its age is unknown.
func TestFlappingRuleAfterTheClockSteppedBackRecordsTheSettling(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	probe, later := h.probesOnAClock(5 * time.Minute)
	for range 5 { // ten changes within the hour: flapping
		probe(false)
		probe(true)
	}
	if health := h.eventsSaying("plugin-health", ""); !strings.Contains(health[0], `plugin "mem" is flapping`) {
		t.Fatalf("newest plugin-health event %q; want the flapping notice (the test's premise)", health[0])
	}
	final, word := h.unrecordedHealth()
	later(-24 * time.Hour)
	for range 30 { // two and a half hours of probes on the stepped clock
		probe(final)
	}
	health := h.eventsSaying("plugin-health", "")
	if !strings.HasPrefix(lastChange(health[0]), word) {
		t.Fatalf("the plugin settled %q 2.5 hours ago by the clock stepped back a day, and `plugin status` says so, but the newest plugin-health event is %q\nall:\n%s",
			word, health[0], strings.Join(health, "\n"))
	}
}

// The honest case beside it: a plugin flapping within the hour, the clock stepping forward a
// minute meanwhile, still has its changes past flapChanges left unrecorded (its flapping notice
// is not repeated, nor each change recorded).
func TestFlappingRuleStillBoundsAFlappingPluginOnAClockThatRunsOn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	probe, later := h.probesOnAClock(10 * time.Second)
	for range 5 {
		probe(false)
		probe(true)
	}
	later(time.Minute)
	for range 20 {
		probe(false)
		probe(true)
	}
	if health := h.eventsSaying("plugin-health", ""); len(health) > flapChanges+1 {
		t.Fatalf("%d plugin-health events for a plugin flapping within the hour, want at most %d:\n%s", len(health), flapChanges+1, strings.Join(health, "\n"))
	}
}

// mend33: the bound flapping's doc states for a clock stepped back while the plugin still
// flaps: the changes stamped ahead of the stepped clock no longer count as within the hour, and
// at most flapChanges changes more (and one flapping notice) are recorded on the stepped clock
// before the rule holds again, however long the plugin keeps flapping.
func TestFlappingRuleAfterTheClockSteppedBackWhileStillFlappingIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	probe, later := h.probesOnAClock(10 * time.Second)
	for range 5 {
		probe(false)
		probe(true)
	}
	before := len(h.eventsSaying("plugin-health", ""))
	later(-24 * time.Hour)
	for range 20 {
		probe(false)
		probe(true)
	}
	health := h.eventsSaying("plugin-health", "")
	if n := len(health) - before; n > flapChanges+1 {
		t.Fatalf("%d plugin-health events recorded after the clock stepped back a day, the plugin flapping within minutes; want at most %d:\n%s",
			n, flapChanges+1, strings.Join(health, "\n"))
	}
	if !strings.Contains(health[0], `plugin "mem" is flapping`) {
		t.Fatalf("newest plugin-health event %q; want the flapping notice once the rule holds again on the stepped clock", health[0])
	}
}
