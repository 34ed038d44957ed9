package tui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

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
	probing      bool
	updated      time.Time // when the shown data was read
	err          error     // the last read's error, shown until a read succeeds
}

// start reads and probes at once, and arms both timers.
func (l *live) start() tea.Cmd {
	return tea.Batch(l.read(), l.probe(),
		l.c.after(l.refreshEvery, func() tea.Msg { return refreshTickMsg{} }),
		l.c.after(l.probeEvery, func() tea.Msg { return probeTickMsg{} }))
}

// read asks the engine for a fresh snapshot of the store.
func (l *live) read() tea.Cmd {
	l.seq++
	l.reading = true
	seq, ctx, eng, n, now := l.seq, l.ctx, l.eng, l.events, l.c.Now
	return func() tea.Msg {
		d, err := eng.Dashboard(ctx, n)
		if err == nil {
			err = redacted(ctx, eng, &d)
		}
		if err != nil {
			return dashboardMsg{seq: seq, err: err}
		}
		s := snapshot{Dashboard: d}
		at := now()
		return dashboardMsg{seq: seq, data: s, rows: buildRows(s, at), at: at}
	}
}

// probe asks the engine to probe every plugin, which records their health in the store.
func (l *live) probe() tea.Cmd {
	l.probing = true
	ctx, eng := l.ctx, l.eng
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		ps, err := eng.PluginStatus(ctx, "")
		return probedMsg{plugins: ps, err: err}
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

// onData reports whether msg is newer than what is shown.
func (l *live) onData(msg dashboardMsg) bool {
	if msg.seq == l.seq {
		l.reading = false
	}
	if msg.seq <= l.applied {
		return false
	}
	l.applied = msg.seq
	if msg.err != nil {
		l.err = msg.err
		return false
	}
	l.err, l.updated = nil, msg.at
	return true
}

// onProbed ends a probe; the fresh health is in the store, so a read shows it everywhere
// (plugins, and volumes' schedulability) in one consistent snapshot.
func (l *live) onProbed(msg probedMsg) tea.Cmd {
	l.probing = false
	return l.read()
}
