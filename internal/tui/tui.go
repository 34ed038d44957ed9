// Package tui is volctl's dashboard: a full-screen bubbletea program showing volumes, claims and
// mounts, plugins and recent events, live, with release, detach and delete behind a
// confirmation. It reads and acts only through the engine, behind the Engine interface.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/shellquote"
)

// Engine is what the dashboard needs of the engine; *engine.Engine is the real one.
type Engine interface {
	// Dashboard reads volumes, claims, plugins (stored health) and recent events at once.
	Dashboard(ctx context.Context, events int) (engine.Dashboard, error)
	Volume(ctx context.Context, idOrPrefix string) (engine.VolumeInfo, error)
	// PluginStatus probes plugins live and records their health.
	PluginStatus(ctx context.Context, id string) ([]engine.PluginInfo, error)
	Release(ctx context.Context, volumeID, alloc string) (engine.ReleaseResult, error)
	Detach(ctx context.Context, volumeID string, force bool) (engine.DetachResult, error)
	DeleteVolume(ctx context.Context, id string) error
	// Reconcile drives what was left half-way to where it was going (volctl reconcile).
	Reconcile(ctx context.Context) (engine.ReconcileReport, error)
}

var _ Engine = (*engine.Engine)(nil)

// Options configure the dashboard. Zero fields take defaults.
type Options struct {
	Engine   Engine
	ReadOnly bool          // no release, detach, delete or reconcile
	Refresh  time.Duration // how often the store is re-read; 2s
	Probe    time.Duration // how often plugins are probed live; 10s
	Events   int           // how many recent events the events view keeps; 200
	Now      func() time.Time
	// Renderer carries the colour profile and background, decided before the program starts
	// (NewRenderer); nil is no colour.
	Renderer *lipgloss.Renderer
	// After schedules a timer's message; nil is tea.Tick. Tests that drive the model by hand,
	// running its commands themselves, return nil here so as not to sleep through timers.
	After func(d time.Duration, msg func() tea.Msg) tea.Cmd
	// Advice rewrites the volctl commands the dashboard shows (cli: to carry the --state-dir
	// given: advisedEngine); nil leaves them as they are.
	Advice func(string) string
}

// Defaults for Options.
const (
	DefaultRefresh = 2 * time.Second
	DefaultProbe   = 10 * time.Second
	DefaultEvents  = 200
)

// Model is the root of the dashboard: it routes keys and messages to the components and lays
// them out. Each component owns its messages and the commands that produce them.
type Model struct {
	c   *Common
	ctx context.Context
	eng Engine

	live    live
	data    snapshot
	tabs    []*table // one per view, in views' order
	active  tabID
	detail  *detail  // open detail view, or nil
	dialog  *confirm // open confirmation, or nil
	failure *failure // an action's error too long for the status line, or nil
	// boxes are the boxes to show after failure, in turn (openBox): one opened over another
	// dropped it unseen (TestActionResultIsNotDroppedForTheStateUnusableBox).
	boxes    []*failure
	showHelp bool
	sized    bool // a size has come: 0x0 after it is a terminal that does not know its size

	quitArmed bool // q was pressed while an action ran: pressed again, while its message shows, it quits
	quitSeq   int  // the status message that says so

	volumeReads uint64 // the volume detail's reads issued (volumeMsg.seq)
	questions   uint64 // the actions' questions opened (action.asking)

	filtering bool
	filter    filterInput
	help      help.Model
	status    statusLine
}

// New builds the dashboard. ctx bounds every engine call it makes.
func New(ctx context.Context, opts Options) *Model {
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Probe <= 0 {
		opts.Probe = DefaultProbe
	}
	if opts.Events <= 0 {
		opts.Events = DefaultEvents
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Renderer == nil {
		opts.Renderer = NewRenderer(io.Discard, false)
	}
	if opts.After == nil {
		opts.After = tick
	}
	c := &Common{
		Styles: NewStyles(opts.Renderer), Keys: DefaultKeyMap(opts.ReadOnly),
		Now: opts.Now, ReadOnly: opts.ReadOnly, after: opts.After,
	}
	if opts.Advice != nil {
		opts.Engine = advisedEngine{Engine: opts.Engine, advise: opts.Advice}
		c.Styles.advise = opts.Advice
	}
	m := &Model{c: c, ctx: ctx, eng: opts.Engine}
	m.live = live{c: c, ctx: ctx, eng: opts.Engine, refreshEvery: opts.Refresh, probeEvery: opts.Probe, events: opts.Events}
	for _, v := range views {
		m.tabs = append(m.tabs, newTable(c, v.columns, 0, false, c.Styles.advised(v.empty)))
	}

	m.filter = filterInput{c: c}
	m.help = help.New()
	m.help.Styles = c.Styles.Help
	m.status = newStatusLine(c)
	return m
}

// Init reads the store and probes the plugins at once, and starts both timers.
func (m *Model) Init() tea.Cmd { return m.live.start() }

// Update routes a message. It does no I/O: engine calls happen in the commands it returns.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		// A multiplexer or a test can send a negative size: below zero, every column hid and
		// the table sorted by column -1.
		m.c.Width, m.c.Height = min(max(0, msg.Width), maxWidth), min(max(0, msg.Height), maxHeight)
		m.sized = true
		m.resize()
	case tea.KeyMsg:
		return m, m.onKey(msg)
	case refreshTickMsg:
		return m, m.live.onRefreshTick()
	case probeTickMsg:
		return m, m.live.onProbeTick()
	case dashboardMsg:
		// Said once, the first read that finds the state unusable, whatever the read before
		// found: opened only after a read that worked, a busy read first (a restore writing the
		// file) kept it shut for good (TestStateReplacedAfterAnotherReadFailureIsSaidInABox).
		wasUnusable := m.live.err != nil && engine.StateUnusable(m.live.err)
		apply, next := m.live.onData(msg)
		if apply {
			return m, tea.Batch(next, m.setData(msg.data, msg.rows))
		}
		if !wasUnusable && m.live.err != nil && engine.StateUnusable(m.live.err) {
			// Replaced under the dashboard (a backup restored) or damaged: no read will work
			// until a restart or a restore, which the status line's cut words may not say.
			m.openBox(&failure{c: m.c, title: "The state database cannot be read", err: m.live.err.Error()})
		}
		return m, next
	case probedMsg:
		var expire tea.Cmd
		if msg.err != nil && !m.status.shown() {
			expire = m.status.set("probe plugins: "+msg.err.Error(), true)
		}
		return m, tea.Batch(expire, m.live.onProbed(msg))
	case statusExpiredMsg:
		m.status.expire(msg)
	case volumeMsg:
		// A read older than the one shown is dropped, as an older dashboard read is
		// (live.onData): the reads run in goroutines of their own, and a late one showed a
		// claim released since, and was what the action keys acted on, until the next refresh
		// (TestVolumeDetailDropsALateOlderRead).
		if m.detail != nil && m.detail.tab == tabVolumes && m.detail.key == msg.id && msg.seq > m.detail.volumeSeq {
			m.detail.volumeSeq = msg.seq
			m.detail.setVolume(msg)
		}
	case recordMsg:
		if m.dialog != nil && m.dialog.a.asking == msg.question && m.dialog.a.record == nil {
			m.dialog.a.record = &msg.record
		}
	case actionDoneMsg:
		m.quitArmed = false
		expire := m.status.done(msg)
		// A result too long for the status line opens whole in a box: an error, or a success
		// with warnings of what it left undone (an attachment owed), which the line would cut.
		title, text, line := msg.a.done(), msg.text, msg.text
		if msg.err != nil {
			title, text, line = msg.a.failed(), msg.err.Error(), "error: "+msg.err.Error()
		}
		if lipgloss.Width(line) > m.c.Width-4 {
			m.openBox(&failure{c: m.c, title: title, err: text})
		}
		if msg.err == nil && msg.a.kind == actDelete && m.detail != nil && m.detail.key == msg.a.volume {
			m.detail = nil
		}
		return m, tea.Batch(expire, m.live.read())
	case spinner.TickMsg:
		return m, m.status.spinTick(msg)
	}
	return m, nil
}

// openBox shows f, or, with a box open, after it.
func (m *Model) openBox(f *failure) {
	if m.failure == nil {
		m.failure = f
		return
	}
	m.boxes = append(m.boxes, f)
}

func (m *Model) resize() {
	for _, t := range m.tabs {
		t.setSize(bodyHeight(m.c) - 1)
	}
	if m.detail != nil {
		m.detail.setSize()
	}
	m.help.Width = m.c.Width - 2
}

// bodyHeight is what is left between the tab bar and the status and help lines.
func bodyHeight(c *Common) int { return max(0, c.Height-3) }

// setData shows a fresh read: its rows, formatted by the read's command, are filtered and
// sorted here, once per read rather than per frame.
func (m *Model) setData(d snapshot, rows []rowSet) tea.Cmd {
	m.data = d
	for i, t := range m.tabs {
		t.setRows(rows[i])
	}
	return m.refreshDetail()
}

// refreshDetail brings an open detail view up to date with the data.
func (m *Model) refreshDetail() tea.Cmd {
	if m.detail == nil {
		return nil
	}
	return views[m.detail.tab].refresh(m, m.detail)
}

func matches(msg tea.KeyMsg, b ...key.Binding) bool { return key.Matches(msg, b...) }

func (m *Model) onKey(msg tea.KeyMsg) tea.Cmd {
	k := m.c.Keys
	if msg.String() == "ctrl+c" {
		return tea.Quit
	}
	switch {
	case m.failure != nil:
		if matches(msg, k.Choose, k.Cancel, k.Back) {
			m.failure = nil
			if len(m.boxes) > 0 {
				m.failure, m.boxes = m.boxes[0], m.boxes[1:]
			}
		} else {
			m.failure.text.Update(m.c, msg)
		}
		return nil
	case m.dialog != nil:
		done, run := m.dialog.Update(msg)
		if !done {
			return nil
		}
		a := m.dialog.a
		m.dialog = nil
		if run {
			if i := slices.IndexFunc(m.data.Volumes, func(v engine.VolumeSummary) bool { return v.Key() == a.volume }); i >= 0 && a.kind != actReconcile {
				a.plugin = m.data.Volumes[i].PluginID
			}
			return tea.Batch(m.status.start(a), a.run(m.ctx, m.eng))
		}
		return nil
	case m.filtering:
		return m.onFilterKey(msg)
	case m.showHelp:
		switch {
		case matches(msg, k.Quit):
			return m.quit()
		case matches(msg, k.Help, k.Back):
			m.showHelp = false
		}
		return nil
	}

	if m.c.ReadOnly && m.c.Keys.isAction(msg.String()) {
		return m.status.set("read-only dashboard (--readonly): actions are off", true)
	}
	t := m.tabs[m.active]
	switch {
	case matches(msg, k.Quit):
		return m.quit()
	case matches(msg, k.Help):
		m.showHelp = true
	case matches(msg, k.Refresh):
		cmds := []tea.Cmd{m.live.read()}
		if !m.live.probing {
			cmds = append(cmds, m.live.probe())
		}
		return tea.Batch(cmds...)
	case matches(msg, k.Back):
		if m.detail != nil {
			m.detail = nil
		} else if t.filter != "" {
			t.setFilter("")
		}
	case matches(msg, k.Tabs...):
		for i, b := range k.Tabs {
			if matches(msg, b) {
				m.switchTab(tabID(i))
			}
		}
	case matches(msg, k.NextTab):
		m.switchTab((m.active + 1) % numTabs)
	case matches(msg, k.PrevTab):
		m.switchTab((m.active + numTabs - 1) % numTabs)
	case matches(msg, k.Release):
		return m.ask(actRelease)
	case matches(msg, k.Detach):
		return m.ask(actDetach)
	case matches(msg, k.Delete):
		return m.ask(actDelete)
	case matches(msg, k.ForceDetach):
		return m.ask(actForceDetach)
	case matches(msg, k.Reconcile):
		return m.ask(actReconcile)
	case m.detail != nil:
		m.detail.Update(msg)
	case matches(msg, k.Filter):
		m.filtering = true
		m.filter.SetValue(t.filter)
	case matches(msg, k.Sort):
		t.cycleSort()
	case matches(msg, k.Reverse):
		t.reverse()
	case matches(msg, k.Up):
		t.move(-1)
	case matches(msg, k.Down):
		t.move(1)
	case matches(msg, k.PageUp):
		t.move(-max(1, t.height-1))
	case matches(msg, k.PageDown):
		t.move(max(1, t.height-1))
	case matches(msg, k.Top):
		t.top()
	case matches(msg, k.Bottom):
		t.bottom()
	case matches(msg, k.Open):
		return m.openDetail()
	}
	return nil
}

// quit quits, unless an action runs: quitting ends the context its engine calls run under,
// which would cut it short between its RPCs, its claims or volume left half-way for a reconcile.
// Then q says so, and quits when pressed again; ctrl+c quits at once.
func (m *Model) quit() tea.Cmd {
	if m.status.running == nil || m.quitArmed && m.status.seq == m.quitSeq && m.status.shown() {
		return tea.Quit
	}
	// Armed for as long as its message shows: a q pressed after it expired (or was replaced)
	// asks again rather than quitting at once.
	m.quitArmed = true
	cmd := m.status.set("q again to quit, cutting it short: what it has not done is left half-way, for reconcile", true)
	m.quitSeq = m.status.seq
	return cmd
}

// onFilterKey edits the filter; the rows narrow as the user types.
func (m *Model) onFilterKey(msg tea.KeyMsg) tea.Cmd {
	k, t := m.c.Keys, m.tabs[m.active]
	switch {
	case matches(msg, k.ClearFilter):
		m.filtering = false
		t.setFilter("")
	case matches(msg, k.ApplyFilter):
		m.filtering = false
	case m.filter.Update(msg) && m.filter.Value() != t.filter:
		t.setFilter(m.filter.Value())
	}
	return nil
}

func (m *Model) switchTab(to tabID) {
	m.active, m.detail = to, nil
}

// openDetail opens the selected row's detail view.
func (m *Model) openDetail() tea.Cmd {
	r := m.tabs[m.active].selected()
	if r == nil {
		return nil
	}
	title, load := views[m.active].open(m, r)
	m.detail = newDetail(m.c, m.active, r.key, title)
	m.detail.name = r.cells[0] // its ID as shown, for saying it is gone
	if load != nil {
		m.detail.loading, m.detail.note = true, "loading…"
		m.detail.rebuild()
		return load
	}
	return m.refreshDetail()
}

// ask opens the confirmation for an action on what is selected, or says why it cannot.
func (m *Model) ask(kind actionKind) tea.Cmd {
	if m.status.running != nil {
		return m.status.set("one action at a time: wait for this one to finish", false)
	}
	a, err := m.target(kind)
	if err != nil {
		if lipgloss.Width("error: "+err.Error()) > m.c.Width-4 {
			m.openBox(&failure{c: m.c, title: "Cannot " + a.verb(), err: err.Error()})
		}
		return m.status.set(err.Error(), true)
	}
	m.questions++
	a.asking = m.questions
	m.dialog = newConfirm(m.c, a)
	if kind == actRelease || kind == actReconcile {
		return nil
	}
	return readRecord(m.ctx, m.eng, a)
}

// target finds what an action applies to: the open detail's volume or claim, or the selected
// row of the volumes or claims view; an error says why the action does not apply.
func (m *Model) target(kind actionKind) (action, error) {
	a := action{kind: kind}
	switch kind {
	case actReconcile:
		return a, nil
	case actRelease:
		var c *engine.ClaimInfo
		switch {
		case m.detail != nil && m.detail.claim != nil:
			c = m.detail.claim
		case m.detail == nil && m.active == tabClaims && m.tabs[tabClaims].selected() != nil:
			c = &m.data.Claims[m.tabs[tabClaims].selected().ref]
		default:
			return a, errors.New("release needs a claim: select one in the claims view (2)")
		}
		a.volume, a.alloc, a.group, a.asked = c.VolumeKey(), c.AllocKey(), c.Group, []int64{c.ID}
		a.volumeShown, a.allocShown = c.VolumeID, c.Alloc
		return a, nil
	}
	var v engine.VolumeSummary
	switch {
	case m.detail != nil && m.detail.volume != nil:
		v = m.detail.volume.VolumeSummary
	case m.detail == nil && m.active == tabVolumes && m.tabs[tabVolumes].selected() != nil:
		v = m.data.Volumes[m.tabs[tabVolumes].selected().ref]
	default:
		return a, fmt.Errorf("%s needs a volume: select one in the volumes view (1)", [...]string{"", "detach", "delete", "force detach"}[kind])
	}
	a.volume, a.drawn = v.Key(), v.CreatedAt
	a.volumeShown = v.ID
	for _, c := range m.data.Claims {
		if c.VolumeKey() == v.Key() {
			name := strconv.Quote(c.Alloc)
			if c.Group != "" {
				name += fmt.Sprintf(" (group %q)", c.Group)
			}
			a.allocs = append(a.allocs, name)
			a.asked = append(a.asked, c.ID)
		}
	}
	if kind == actDetach && len(a.allocs) == 0 && v.HandedOver() {
		// Its attachment, if any, is Nomad's allocs' until the take-back: "nothing to detach"
		// said nothing of that, nor of the way (the detail names it).
		return a, fmt.Errorf("%q is handed over to Nomad, which claims it, not volctl: nothing here to detach (its detail (Enter) says how to take it back)", v.ID)
	}
	if kind == actDetach && len(a.allocs) == 0 && !v.Leftover() {
		// Without claims, the engine's detach undoes what the volume still records of its
		// staging or attachment (an owed unpublish), as `volume detach` does; with neither it
		// does nothing. Before, refused whatever the volume recorded, the volume left attached
		// (TestDashboardDetachOfAVolumeRecordedAttachedDoesNotSayNothingToDetach).
		return a, fmt.Errorf("%q has no claims on this host: nothing to detach", v.ID)
	}
	if kind == actDelete {
		if why := m.cannotDelete(v); why != "" {
			return a, errors.New(why)
		}
	}
	return a, nil
}

// cannotDelete says why a volume cannot be deleted, "" when it can: the engine would refuse a
// volume with live claims, or one whose plugin cannot delete volumes.
func (m *Model) cannotDelete(v engine.VolumeSummary) string {
	if n := v.ReadClaims + v.WriteClaims; n > 0 {
		return fmt.Sprintf("%q has %s: release or detach first", v.ID, plural(n, "live claim"))
	}
	if v.State == "deleting" {
		return ""
	}
	for _, p := range m.data.Plugins {
		if p.Key() == v.PluginKey() {
			if !slices.Contains(p.Capabilities.Controller, "CREATE_DELETE_VOLUME") {
				// Lost in a restart, if volctl created the volume through it: started with it
				// again, the plugin deletes it (as `volume delete` says).
				// The forgetting named, carrying --state-dir as all advice here does: "forget the
				// volume" alone could not be followed as read
				// (TestDashboardDeleteRefusalOfALostCapabilityNamesTheCommand).
				return m.c.Styles.advised(fmt.Sprintf("plugin %q cannot delete volumes (it has no CREATE_DELETE_VOLUME capability now): start it with one to delete volume %q, or `%s` forgets the volume and leaves its storage",
					p.ID, v.ID, shellquote.Command("volctl volume deregister", v.ID)))
			}
			return ""
		}
	}
	// Registered again, the plugin deletes it, as the engine's own refusal says; "nothing can
	// delete" was untrue (TestDashboardDeleteRefusalOfAVolumeWhosePluginIsNotRegisteredSaysTheWayOut).
	return m.c.Styles.advised(fmt.Sprintf("plugin %q is not registered (deregistered with --force): register it again (`volctl plugin register`) to delete volume %q, or `%s` forgets the volume and leaves its storage",
		v.PluginID, v.ID, shellquote.Command("volctl volume deregister", v.ID)))
}

// selectedVolume is the volume an action key would act on, or nil.
func (m *Model) selectedVolume() *engine.VolumeSummary {
	switch {
	case m.detail != nil && m.detail.volume != nil:
		return &m.detail.volume.VolumeSummary
	case m.detail == nil && m.active == tabVolumes && m.tabs[tabVolumes].selected() != nil:
		return &m.data.Volumes[m.tabs[tabVolumes].selected().ref]
	}
	return nil
}

// Run starts the dashboard on the terminal in and out until the user quits or ctx ends. The
// renderer must have been made (NewRenderer) before: the program never asks the terminal
// about colours once it owns it.
func Run(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	if opts.Renderer != nil {
		// bubbles' own default styles use the default renderer: give it the decided profile too.
		lipgloss.SetDefaultRenderer(opts.Renderer)
	}
	// Engine calls still out when the user quits end with the program, not after it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// bubbletea's own recovery of a panic prints its value to stdout with fmt.Printf, past
	// crash.Redact's scrubbing, and its "Caught panic" says nothing of what to do: the
	// dashboard's panics go to volctl's crash handler instead, as every other panic does
	// (guarded), and bubbletea catches none.
	p := tea.NewProgram(guarded{New(ctx, opts)}, tea.WithAltScreen(), tea.WithContext(ctx),
		tea.WithInput(in), tea.WithOutput(out), tea.WithoutCatchPanics())
	// A panic ends the process in crash.Recover: in a goroutine volctl started (crash.Go), in
	// the model or a command it returned (guarded), or in bubbletea's own code on this
	// goroutine (the Recover deferred here, which runs while the OnCrash function is still
	// registered); the terminal is given back first.
	defer crash.OnCrash(func() { _ = p.ReleaseTerminal() })()
	defer crash.Recover()
	_, err := p.Run()
	if errors.Is(err, tea.ErrInterrupted) || errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // a signal asked the dashboard to close: that is a normal way out
	}
	return err
}

// guarded is the dashboard's model with every panic of its own code reported by volctl's crash
// handler (crash.Recover: exit status 70, the report scrubbed, the terminal given back first):
// its Init, Update and View, which bubbletea runs on its event loop, and each command they
// return, which bubbletea runs in goroutines of its own.
type guarded struct{ m tea.Model }

func (g guarded) Init() tea.Cmd {
	defer crash.Recover()
	return guard(g.m.Init())
}

func (g guarded) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	defer crash.Recover()
	m, cmd := g.m.Update(msg)
	return guarded{m}, guard(cmd)
}

func (g guarded) View() string {
	defer crash.Recover()
	return g.m.View()
}

// guard is cmd run under crash.Recover; nil stays nil.
func guard(cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		defer crash.Recover()
		return guardMsg(cmd())
	}
}

// cmdType is the type of a command, the element of tea.BatchMsg and of tea.Sequence's message.
var cmdType = reflect.TypeFor[tea.Cmd]()

// guardMsg guards the commands of a batch (tea.BatchMsg) or a sequence (tea.Sequence's message,
// of a type bubbletea does not export: made again by reflection), which bubbletea runs itself
// rather than through Update. Any other message is returned as it is.
func guardMsg(msg tea.Msg) tea.Msg {
	v := reflect.ValueOf(msg)
	if v.Kind() != reflect.Slice || v.Type().Elem() != cmdType {
		return msg
	}
	out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
	for i := range v.Len() {
		cmd, _ := v.Index(i).Interface().(tea.Cmd)
		out.Index(i).Set(reflect.ValueOf(guard(cmd)))
	}
	return out.Interface()
}

// loadVolume reads volume id for the detail (loadVolumeRead), numbered after every read issued
// before it.
func (m *Model) loadVolume(id string) tea.Cmd {
	m.volumeReads++
	return loadVolumeRead(m.ctx, m.eng, id, m.live.probed, m.volumeReads)
}
