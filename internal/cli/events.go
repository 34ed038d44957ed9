package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// EventsOptions are the inputs of `volctl events`.
type EventsOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)
	Now    func() time.Time

	Since    string // a duration back from now ("10m") or an RFC 3339 time
	Limit    int    // the newest N (0: every event kept)
	Follow   bool
	Filter   engine.EventFilter
	Exporter exportFlags

	// Poll is how often --follow reads the log for new events; 500ms.
	Poll time.Duration
}

// afterFirstEventsRead, when set (by tests), runs right after the events command's first read
// of the events it shows.
var afterFirstEventsRead func()

// eventsPoll is how often --follow looks for new events.
const eventsPoll = 500 * time.Millisecond

// maxChangedWhileRead is how many polls in a row a follow reads again after a refusal as
// changed while read (engine.ErrChangedWhileRead) before it gives up, saying so: a writer
// changing the file under every read for so long is no moment's.
const maxChangedWhileRead = 50

func newCmdEvents(f *Factory, runF func(*EventsOptions) error) *cobra.Command {
	opts := &EventsOptions{IO: f.IO, Engine: f.Engine, Now: time.Now, Poll: eventsPoll}
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show the event log (the dashboard's events view), or follow it",
		Long: `The event log, oldest first: claims and releases, RPC errors, plugin health changes,
volume creates and deletes — what the dashboard (volctl tui) shows in its events view. The
log keeps the newest 10,000 events, dropping the oldest as new ones come.

--since keeps the events of the last DURATION ("10m", "2h", "7d") or since an RFC 3339 time;
-n the newest N; --kind the events of one kind, matched exactly (a kind volctl never records,
unless the log holds events of it from an older volctl, is a usage error listing the kinds).
A --volume, --alloc or --plugin that no event names, when nothing matches, is told with the
ones the log names that were likely meant (did you mean "logs"?). --follow prints new events as they are recorded until Ctrl-C; with --json
each event is then one JSON object per line, else the list is one JSON array (docs/json.md).
A --follow whose state database is replaced under it (a backup restored over
volctl.db, the state dir moved) stops, saying so (exit 1), rather than follow a
file no volctl writes to any more.`,
		Example: `  volctl events --since 10m
  volctl events --volume db --follow
  volctl events --kind plugin-health --json
  volctl events --follow --json | jq -r 'select(.code != null) | .message'`,
		Args: lastAsFlag(0, "--volume", "--alloc", "--plugin"),
		RunE: runOpts(opts, nil, runF, eventsRun),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Since, "since", "", "only events of the last `DURATION` (10m, 2h, 7d) or since an RFC 3339 time")
	intVar(fl, &opts.Limit, "limit", "n", 0, "only the newest `N` events (0: every event kept)")
	fl.BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new events until interrupted")
	fl.StringVar(&opts.Filter.Kind, "kind", "", "only events of this kind (claim, release, plugin-health, volume-create, ...)")
	idVar(fl, &opts.Filter.VolumeID, "volume", "only events of this volume")
	idVar(fl, &opts.Filter.Alloc, "alloc", "only events of this alloc")
	idVar(fl, &opts.Filter.PluginID, "plugin", "only events of this plugin")
	addExportFlags(cmd, &opts.Exporter, opts.IO)
	return cmd
}

// parseSince reads --since: a duration back from now, or a time. The duration may start with
// days ("7d", "1d12h"), which Go's durations lack and `events --since 1d` users write first;
// the log keeps 10,000 events, which a quiet host spreads over weeks.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	d, derr := sinceDuration(s)
	if derr == nil {
		if d < 0 {
			return time.Time{}, usageError("events: --since %s: a duration back from now is positive (10m, 2h, 7d)", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	_, notDuration := spec.ParseDuration(s) // what is wrong with it as a duration, in the words of every duration flag
	if strings.Contains(s, "d") {
		notDuration = derr // days are --since's own
	}
	return time.Time{}, usageError("events: --since: %v (write 10m, 2h, 7d), nor is it an RFC 3339 time (2026-03-14T09:00:00Z)", notDuration)
}

// sinceDuration is time.ParseDuration with whole days first: "7d", "1d12h". A day is 24 hours
// (the log's times are instants, not calendar days). With anything else before the "d" it is
// not a duration; past the longest duration volctl holds (about 292 years, as for hours:
// "36525d" was refused as not a duration while "876600h" was taken) it is too long.
func sinceDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.Atoi(days)
	if err != nil || n < 0 || days != strconv.Itoa(n) {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	more := time.Duration(0)
	if rest != "" {
		if more, err = time.ParseDuration(rest); err != nil || more < 0 {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
	}
	const day = 24 * time.Hour
	if int64(n) > int64(math.MaxInt64/day) || time.Duration(n)*day > math.MaxInt64-more {
		return 0, fmt.Errorf("%q is longer than the longest duration volctl holds (%dd, about 292 years)", s, int64(math.MaxInt64/day))
	}
	return time.Duration(n)*day + more, nil
}

func eventsRun(ctx context.Context, opts *EventsOptions) (err error) {
	check := checkReadTemplate[[]engine.EventInfo]
	if opts.Follow {
		check = checkReadTemplate[engine.EventInfo] // each event as it is recorded
	}
	if err := check(&opts.Exporter); err != nil {
		return err
	}
	if opts.Limit < 0 {
		return usageError("events: -n must be 0 (every event) or more, got %d", opts.Limit)
	}
	start := opts.Now()
	since, err := parseSince(opts.Since, start)
	if err != nil {
		return err
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	// A follow goes on from the newest event of all read before the events shown, whatever
	// they match: an event recorded after this read is either among those shown or after it.
	// Before, the newest was read after them when none matched, and an event that matched,
	// recorded between the two reads, was never printed (TestEventsFollowMissesNoEventBetweenItsFirstReads).
	var newest int64
	if opts.Follow {
		all, err := e.Events(ctx, 1, engine.EventFilter{})
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		if len(all) > 0 {
			newest = all[0].ID
		}
	}
	// Messages the engine worded from data a plugin returned (an external ID, a topology) are
	// scrubbed with the secrets read with them.
	evs, err := e.EventsRedacted(ctx, opts.Limit, opts.Filter)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	if afterFirstEventsRead != nil {
		afterFirstEventsRead()
	}
	if err := checkEventKind(ctx, e, opts.Filter.Kind, evs); err != nil {
		return err
	}
	beforeSince := func(ev engine.EventInfo) bool { return ev.At.Before(since) }
	evs = slices.DeleteFunc(evs, beforeSince)
	slices.Reverse(evs) // oldest first, as a log reads

	out := bufio.NewWriter(opts.IO.Out)
	defer flush(out, &err)
	if !opts.Follow {
		switch {
		case opts.Exporter.Enabled():
			if evs == nil {
				evs = []engine.EventInfo{} // [] in JSON, not null
			}
			return opts.Exporter.Write(ctx, out, evs)
		case len(evs) == 0 && opts.Since == "" && opts.Filter == (engine.EventFilter{}):
			fmt.Fprintln(opts.IO.ErrOut, "No events recorded yet: volctl records one per claim, release, registration, health change, ...")
			return nil
		case len(evs) == 0:
			near, err := e.EventFilterNear(ctx, opts.Filter)
			if err != nil {
				return fmt.Errorf("events: %w", err)
			}
			if near != "" {
				near = ": " + near // its IDs quoted (strconv.Quote): no control or bidi character raw
			}
			fmt.Fprintf(opts.IO.ErrOut, "No events match%s.\n", near)
			return nil
		}
		return writeEventTable(out, evs, opts.Now(), true)
	}

	// Follow: what is there, then each new event as it is recorded, until ctx ends.
	w := eventWriter{ctx: ctx, opts: opts, out: out}
	if err := w.write(evs, true); err != nil {
		return err
	}
	last := newest
	if len(evs) > 0 {
		last = max(last, evs[len(evs)-1].ID)
	}
	waitSince := since.After(start) // a --since ahead of the follow's start: held to, until reached
	if err := out.Flush(); err != nil {
		return err
	}
	poll := opts.Poll
	if poll <= 0 {
		poll = eventsPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	changed := 0 // polls in a row refused as changed while read (engine.ErrChangedWhileRead)
	for {
		select {
		case <-ctx.Done():
			return nil // Ctrl-C is how following ends
		case <-tick.C:
		}
		// SQLite reads the file it opened, by inode: one replaced under it (a backup restored
		// over volctl.db, the state dir moved) would be followed for good, silent, while every
		// other volctl records in the new one. One stat per poll, as the dashboard's reads.
		if err := e.CheckStateFile(); err != nil {
			return fmt.Errorf("events --follow: %w", err)
		}
		f := opts.Filter
		f.AfterID = last
		read, err := e.EventsFollowed(ctx, f)
		if errors.Is(err, engine.ErrChangedWhileRead) && changed < maxChangedWhileRead {
			// A read-only state another volctl wrote during the read: nothing of it is used,
			// and the next poll reads the file as it is. It ended the follow
			// (TestEventsFollowOnAReadOnlyBindOutlivesAnotherVolctlsWrite).
			changed++
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("events: %w", err)
		}
		changed = 0
		evs, dropped := read.Events, read.Dropped
		last = read.Newest // of all the read saw, matching or not: it reads each event once
		// --since holds for what follows too while it is ahead: one in the future printed
		// every event recorded before it (TestEventsFollowSinceInTheFutureShowsNoEarlierEvent).
		// One reached, or past when the follow began (every duration), holds back nothing
		// more: each event read now is newer than the last printed, and one stamped before it
		// by a clock stepped back was dropped, unsaid
		// (TestEventsFollowSinceADurationPrintsEventsRecordedAfterTheClockSteppedBack).
		if waitSince {
			evs = slices.DeleteFunc(evs, beforeSince)
			waitSince = len(evs) == 0
		}
		if dropped > 0 {
			// On stderr, so that stdout stays the events alone (--json's lines); once, as the
			// follow goes on past them.
			of := ""
			if f != (engine.EventFilter{AfterID: f.AfterID}) {
				of = " (of any kind, volume, alloc or plugin: some may not have matched the filter)"
			}
			gone := "1 event left the log before it could be shown"
			if dropped > 1 {
				gone = strconv.FormatInt(dropped, 10) + " events left the log before they could be shown"
			}
			fmt.Fprintf(opts.IO.ErrOut, "Warning: events --follow fell behind: %s%s; the log keeps the newest %d\n", gone, of, read.Keeps)
		}
		if len(evs) == 0 {
			continue
		}
		slices.Reverse(evs)
		if err := w.write(evs, false); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// checkEventKind refuses a --kind volctl never records and no event matched (evs): --kind
// matches exactly, so a typo ("claims", "plugin_health") matched nothing, printed "No events
// match." and exited 0, and a script or a --follow waiting on it waited forever. A kind an
// older volctl recorded is still taken while its events are in the log: in the log, not among
// evs, which the other filters narrowed (an older kind with a --volume none of its events
// named was refused as no kind, TestOlderKindWithAVolumeFilterIsNoUsageError).
func checkEventKind(ctx context.Context, e *engine.Engine, kind string, evs []engine.EventInfo) error {
	if kind == "" || len(evs) > 0 || slices.Contains(engine.EventKinds, kind) {
		return nil
	}
	held, err := e.Events(ctx, 1, engine.EventFilter{Kind: kind})
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	if len(held) > 0 {
		return nil
	}
	msg := fmt.Sprintf("events: --kind %q is no kind of event volctl records", kind)
	if sug := spec.Suggest(kind, engine.EventKinds); sug != "" {
		msg += fmt.Sprintf("; did you mean %q?", sug)
	}
	return usageError("%s; the kinds are %s", msg, strings.Join(engine.EventKinds, ", "))
}

// eventWriter prints followed events: a JSON object per line, the template per event, or
// table rows (the header once).
type eventWriter struct {
	ctx    context.Context // a --jq filter stops when it ends
	opts   *EventsOptions
	out    io.Writer
	header bool
}

func (w *eventWriter) write(evs []engine.EventInfo, first bool) error {
	switch {
	case w.opts.Exporter.Template != "" || w.opts.Exporter.JQ != "":
		for _, ev := range evs {
			if err := w.opts.Exporter.Write(w.ctx, w.out, ev); err != nil {
				return err
			}
		}
		return nil
	case w.opts.Exporter.JSON:
		for _, ev := range evs {
			b, err := marshalJSON(ev, false)
			if err != nil {
				return err
			}
			if _, err := w.out.Write(b); err != nil {
				return err
			}
		}
		return nil
	}
	if len(evs) == 0 {
		return nil
	}
	err := writeEventTable(w.out, evs, w.opts.Now(), !w.header)
	w.header = true
	return err
}

// writeEventTable prints events with the dashboard's columns; a followed log prints the header
// once, so its later rows are aligned on their own.
func writeEventTable(out io.Writer, evs []engine.EventInfo, now time.Time, header bool) error {
	t := newTable(out, "TIME", "AGE", "KIND", "VOLUME", "ALLOC", "PLUGIN", "MESSAGE")
	if !header {
		t.reset()
	}
	for _, ev := range evs {
		t.row(ev.At.Local().Format(time.DateTime), display.Age(now, ev.At), ev.Kind, ev.VolumeID, ev.Alloc, ev.PluginID, ev.Message)
	}
	return t.render()
}
