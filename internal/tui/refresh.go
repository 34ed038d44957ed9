package tui

import (
	"context"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
)

// Live data: the store is re-read on one self-rearming timer and plugins are probed on another,
// slower one. Both run as commands, so a slow store or a hung plugin never blocks a keypress;
// a timer that fires while its last read is still out skips a beat instead of piling reads up.

type (
	refreshTickMsg struct{}
	probeTickMsg   struct{}

	// dashboardMsg is one read of the store, its rows already formatted; seq orders reads
	// that overtake each other.
	dashboardMsg struct {
		seq  int
		data snapshot
		rows []rowSet
		at   time.Time
		err  error
	}

	// probedMsg is the result of probing every plugin live.
	probedMsg struct {
		plugins []engine.PluginInfo
		err     error
	}
)

// probeTimeout bounds one round of probes, whatever the plugins' own timeouts say.
const probeTimeout = 30 * time.Second

type live struct {
	c   *Common
	ctx context.Context
	eng Engine

	refreshEvery, probeEvery time.Duration
	events                   int

	seq, applied int // last read asked for, last read shown
	reading      bool
	readSince    time.Time // when the read out started
	again        bool      // a read was asked for while one was out: it follows that one
	probing      bool
	// probed is what the last probe found, which the reads show where it is newer than the
	// stored health (the probe may not have been able to record it): replaced whole by each
	// probe, never changed, so a read out holds it safely.
	probed  []engine.PluginInfo
	updated time.Time // when the shown data was read
	err     error     // the last read's error, shown until a read succeeds
}

// start reads and probes at once, and arms both timers.
func (l *live) start() tea.Cmd {
	return tea.Batch(l.read(), l.probe(),
		l.c.after(l.refreshEvery, func() tea.Msg { return refreshTickMsg{} }),
		l.c.after(l.probeEvery, func() tea.Msg { return probeTickMsg{} }))
}

// read asks the engine for a fresh snapshot of the store. While a read is out (the store busy:
// a writer's lock, a migration, a slow disk hold it up to the busy timeout), another asked for
// (r, a probe or an action ending) follows it, once, rather than wait on the same lock beside it.
func (l *live) read() tea.Cmd {
	if l.reading {
		l.again = true
		return nil
	}
	l.seq++
	l.reading, l.readSince = true, l.c.Now()
	seq, ctx, eng, n, now, probed := l.seq, l.ctx, l.eng, l.events, l.c.Now, l.probed
	return func() tea.Msg {
		// The engine's read comes scrubbed, with the secrets that read found
		// (engine.Dashboard); what the probe adds to it is scrubbed here. Scrubbed here whole,
		// as before, a refresh of 10,000 volumes paid the scrub twice (BenchmarkDashboard10k).
		d, err := eng.Dashboard(ctx, n)
		if err == nil && len(probed) > 0 {
			if probed, err = scrubbedProbes(ctx, eng, probed); err == nil {
				d = d.WithPluginsProbed(probed)
			}
		}
		if err != nil {
			return dashboardMsg{seq: seq, err: err}
		}
		s := snapshot{Dashboard: d}
		at := now()
		return dashboardMsg{seq: seq, data: s, rows: buildRows(s, at), at: at}
	}
}

// scrubbedProbes is probed, a probe's findings, with the text WithPluginsProbed takes of them
// (each plugin's last error, which may echo a secret) scrubbed, in a copy: probed is shared
// with the reads out, never changed.
func scrubbedProbes(ctx context.Context, eng Engine, probed []engine.PluginInfo) ([]engine.PluginInfo, error) {
	errs := make([]string, len(probed))
	for i, p := range probed {
		errs[i] = p.LastError
	}
	if err := redacted(ctx, eng, &errs); err != nil {
		return nil, err
	}
	out := slices.Clone(probed)
	for i := range out {
		out[i].LastError = errs[i]
	}
	return out, nil
}

// probe asks the engine to probe every plugin, which records their health in the store.
func (l *live) probe() tea.Cmd {
	l.probing = true
	ctx, eng := l.ctx, l.eng
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		ps, err := eng.PluginStatus(ctx, "")
		// The error goes to the status line: scrubbed, as every text shown is (a round cut
		// short names plugins by their IDs as stored). A read of the local state, not cut short
		// by the round's deadline.
		return probedMsg{plugins: ps, err: redactedError(context.WithoutCancel(ctx), eng, err)}
	}
}

// onRefreshTick re-arms the timer and reads unless a read is still out.
func (l *live) onRefreshTick() tea.Cmd {
	next := l.c.after(l.refreshEvery, func() tea.Msg { return refreshTickMsg{} })
	if l.reading {
		return next
	}
	return tea.Batch(next, l.read())
}

// onProbeTick re-arms the timer and probes unless the last probe is still out.
func (l *live) onProbeTick() tea.Cmd {
	next := l.c.after(l.probeEvery, func() tea.Msg { return probeTickMsg{} })
	if l.probing {
		return next
	}
	return tea.Batch(next, l.probe())
}

// onData reports whether msg is newer than what is shown, and returns the read asked for while
// it was out, if one was.
func (l *live) onData(msg dashboardMsg) (bool, tea.Cmd) {
	var next tea.Cmd
	if msg.seq == l.seq {
		l.reading = false
		if l.again {
			l.again = false
			next = l.read()
		}
	}
	if msg.seq <= l.applied {
		return false, next
	}
	l.applied = msg.seq
	if msg.err != nil {
		l.err = msg.err
		return false, next
	}
	l.err, l.updated = nil, msg.at
	return true, next
}

// slowRead is how long a read is out before the status line says so.
const slowRead = 3 * time.Second

// slow says how long the read out has been, when that is long enough to say: "" otherwise.
func (l *live) slow() string {
	if !l.reading || l.c.Now().Sub(l.readSince) < slowRead {
		return ""
	}
	return "reading for " + display.Age(l.c.Now(), l.readSince)
}

// onProbed ends a probe; the fresh health is in the store, so a read shows it everywhere
// (plugins, and volumes' schedulability) in one consistent snapshot; where the probe could not
// record it, the read shows the probe's reading over the stored one (WithPluginsProbed).
func (l *live) onProbed(msg probedMsg) tea.Cmd {
	l.probing = false
	if msg.plugins != nil {
		l.probed = msg.plugins
	}
	return l.read()
}
