package engine

import (
	"fmt"
	"time"

	"github.com/volctl/volctl/internal/store"
)

// appendEvent appends ev to the event log in tx, bounding what a loop repeats for one claim: its
// restores (appendRestore). Every write of an event that may be a restore goes through it (a
// checkpoint's commit, Engine.event).
func (e *Engine) appendEvent(tx *store.Tx, ev *store.Event) error {
	if ev.Kind == "restore" && ev.VolumeID != "" && ev.Alloc != "" {
		return appendRestore(tx, ev, e.cfg.Now())
	}
	return tx.Events().Append(ev)
}

// appendRestore appends ev, a claim's restore, unless the claim's newest flapChanges restores
// fall within flapWindow of now: then the first one past them is recorded as a notice saying
// so, and the next ones not at all, until the older ones are an hour old. A mount something
// takes again and again (a plugin that loses its mounts at every restart while it crash-loops,
// a mount namespace torn down by a runtime's timer) is restored by each reconcile pass, at
// least one a minute from the agent: one event per claim per pass pushed the rest of the event
// log (10,000 rows) out within hours for a host of a few dozen claims
// (TestRestoredAgainAndAgainIsBoundedInTheEventLog). Each pass's report has every restore, and
// the agent logs it.
func appendRestore(tx *store.Tx, ev *store.Event, now time.Time) error {
	mark := fmt.Sprintf("the mount of alloc %q's claim on volume %q is restored again and again", ev.Alloc, ev.VolumeID)
	notice := fmt.Sprintf("%s: %d times within an hour, something keeps taking it (its plugin losing its mounts, a mount namespace torn down); its restores are not recorded until fewer happen (each reconcile's report has each, and the agent logs it); this restore: ",
		mark, flapChanges)
	return appendBounded(tx, ev, store.EventFilter{Kind: ev.Kind, VolumeID: ev.VolumeID, Alloc: ev.Alloc}, now, false, mark, notice)
}
