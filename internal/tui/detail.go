package tui

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// detail is the Enter view of one row: everything known about it, scrollable. A volume's comes
// from the engine (Volume, as `volume status ID` shows it); the others from the last refresh.
type detail struct {
	c       *Common
	tab     tabID
	key     string // the row's key: volume ID, claim ID, plugin ID, event ID
	name    string // the row's ID as shown (its first cell), scrubbed of secrets as key is not
	title   string
	vp      viewport.Model
	render  func(width int) string // nil while loading
	note    string                 // shown instead of content: loading, gone, an error
	volume  *engine.VolumeInfo     // the volume shown, for actions
	claim   *engine.ClaimInfo
	loading bool

	volumeSeq uint64 // the number of the volume read shown (volumeMsg.seq)
}

// volumeMsg carries a volume read for the detail view, seq its number among the reads issued.
type volumeMsg struct {
	id   string
	seq  uint64
	info engine.VolumeInfo
	err  error
}

// probed is what the dashboard's last probe found (live.probed), shown over the stored health
// where it is the newer, as the lists show it.
func loadVolumeRead(ctx context.Context, eng Engine, id string, probed []engine.PluginInfo, seq uint64) tea.Cmd {
	return func() tea.Msg {
		v, err := shownVolume(ctx, eng, id)
		switch {
		case err == nil:
			if i := slices.IndexFunc(probed, func(p engine.PluginInfo) bool { return p.Key() == v.PluginKey() }); i >= 0 {
				was := v.PluginError
				if v = v.WithPluginProbed(&probed[i]); v.PluginError != was {
					err = redacted(ctx, eng, &v.PluginError) // the probe's words, the rest scrubbed already
				}
			}
		case !volumeGone(v, err, id):
			// Shown in the detail ("read volume X: ..."), scrubbed as what the read finds is.
			err = redactedError(ctx, eng, err)
		}
		return volumeMsg{id: id, seq: seq, info: v, err: err}
	}
}

// newDetail opens the detail of the row with key, under title. The title names the row by its
// IDs, which may hold a bidi override (spec.ValidateID refuses control characters only): it is
// cleaned, as the rows' cells are.
func newDetail(c *Common, tab tabID, key, title string) *detail {
	d := &detail{c: c, tab: tab, key: key, title: clean(title), vp: viewport.New(0, 0)}
	d.setSize()
	return d
}

// setSize fits the viewport between the tab bar and the footer.
func (d *detail) setSize() {
	d.vp.Width, d.vp.Height = d.c.Width, max(0, bodyHeight(d.c)-1)
	d.rebuild()
}

func (d *detail) rebuild() {
	switch {
	case d.render != nil:
		d.vp.SetContent(d.render(d.c.Width))
	default:
		d.vp.SetContent(d.c.Styles.Empty.Render("  " + clean(d.note))) // it may word an error
	}
}

// show sets what the view renders, keeping the scroll position.
func (d *detail) show(render func(width int) string) {
	y := d.vp.YOffset
	d.render, d.note, d.loading = render, "", false
	d.rebuild()
	d.vp.SetYOffset(y)
}

// gone says the row is not there any more (or could not be read).
func (d *detail) gone(note string) {
	d.render, d.note, d.loading, d.volume, d.claim = nil, note, false, nil, nil
	d.rebuild()
}

// setVolume shows a volume read from the engine. The engine finds a volume by an unambiguous
// prefix of its ID too: read by the ID of one deleted since, it answers with another whose ID
// starts so ("db" gone, "db-replica" found), which is not this detail's, and never acted on.
func (d *detail) setVolume(msg volumeMsg) {
	if msg.err != nil || msg.info.Key() != msg.id {
		if volumeGone(msg.info, msg.err, msg.id) {
			d.gone(fmt.Sprintf("volume %q no longer exists", d.name))
		} else {
			d.gone(fmt.Sprintf("read volume %q: %v", d.name, msg.err))
		}
		return
	}
	v := msg.info
	d.volume = &v
	now := d.c.Now()
	d.show(func(w int) string { return volumeDetail(d.c.Styles, v, now, w) })
}

func (d *detail) Update(msg tea.KeyMsg) {
	k := d.c.Keys
	switch {
	case matches(msg, k.Up):
		d.vp.ScrollUp(1)
	case matches(msg, k.Down):
		d.vp.ScrollDown(1)
	case matches(msg, k.PageUp):
		d.vp.PageUp()
	case matches(msg, k.PageDown):
		d.vp.PageDown()
	case matches(msg, k.Top):
		d.vp.GotoTop()
	case matches(msg, k.Bottom):
		d.vp.GotoBottom()
	}
}

func (d *detail) View() string {
	s := d.c.Styles
	title := s.Title.Render(d.title)
	if d.loading {
		title += s.Dim.Render("  loading…")
	}
	if more := d.vp.TotalLineCount() - d.vp.VisibleLineCount(); more > 0 {
		title += s.Dim.Render(fmt.Sprintf("  %d%%", int(d.vp.ScrollPercent()*100)))
	}
	return fitLine(" "+title, d.c.Width) + "\n" + d.vp.View()
}

// The content of each kind of detail. Secrets and mount flags show their keys and counts,
// never their values.

func volumeDetail(s *Styles, v engine.VolumeInfo, now time.Time, w int) string {
	var b detailBuilder
	b.init(s, w)
	pluginHealth := v.PluginHealth().String()
	if v.PluginError != "" {
		pluginHealth += ": " + v.PluginError
	}
	// What an operator needs first: who holds the volume, and what went wrong. The claims come
	// before the long field list, so at 80x24 they show without scrolling; their modes and
	// targets are in each claim's own detail (the claims view).
	b.lines = append(b.lines, fitLine(" "+s.Section.Render("Claims")+s.Dim.Render(
		fmt.Sprintf("  %d read, %d write, %d not at rest", v.ReadClaims, v.WriteClaims, v.Unsettled)), b.w))
	claims := [][]string{{"ALLOC", "MODE", "STATE", "AGE", "LAST ERROR"}}
	for _, c := range v.Claims {
		claims = append(claims, []string{c.Alloc, c.Mode, c.Condition().String(), display.Age(now, c.CreatedAt), c.LastErrorText()})
	}
	b.tableOrNone(claims, errorLast)
	switch {
	case v.UnpublishOwed() && v.Handover != nil:
		// Kept on purpose: Nomad's allocations on the node may use the attachment. In the
		// words `volume status` has (UnpublishWaits): what the plugin lacks besides the take-back.
		b.wrapped(s.Warn, s.advised(fmt.Sprintf("no local claim holds its attachment to node %q: %s", v.AttachedTo, v.UnpublishWaitsClause())))
	case v.UnpublishOwed():
		// What went wrong with no claim to show it: an attachment left behind.
		b.wrapped(s.Warn, fmt.Sprintf("no claim holds its attachment to node %q: ControllerUnpublishVolume is owed (a forced detach could not send it, or the plugin lost PUBLISH_UNPUBLISH_VOLUME). %s",
			v.AttachedTo, v.UnpublishWay()))
	}
	b.section("Volume")
	b.kv("ID", v.ID)
	b.kv("Name", v.Name)
	b.kv("Namespace", v.Namespace)
	b.kv("External ID", v.ExternalID)
	b.kv("CSI Name", v.CSIName)
	b.kv("Plugin ID", v.PluginID)
	b.kv("Provider", strings.TrimSpace(v.Provider+" "+v.ProviderVersion))
	b.kv("Plugin Health", pluginHealth)
	b.kv("State", v.State)
	b.kv("Schedulable", v.Schedulability().String())
	b.kv("Capacity", display.BytesExactly(v.CapacityBytes))
	b.kv("Capacity Min", display.Bytes(v.RequestedMin))
	b.kv("Capacity Max", display.Bytes(v.RequestedMax))
	b.kv("Access Mode", string(v.AccessMode))
	b.kv("Attachment Mode", string(v.AttachmentMode))
	mo := strings.Join(v.MountOptions.Describe(), " ")
	if len(v.MountAllows) > 0 {
		mo += " asking for " + strings.Join(v.MountAllows, ", ") // flags shown redacted; these words are not
	}
	b.kv("Mount Options", mo)
	if asks := engine.ClaimsAllowing(v.Claims); asks != "" {
		// A claim's own --mount-flag too: shown nowhere here, the Mount Options line read as if
		// nothing asked (TestClaimMountFlagsAskingForSuidAreShown).
		b.kv("Claim Mount Flags", asks)
	}
	b.kv("Staged", yesNo(v.Staged))
	if len(v.SameStorage) > 0 { // as `volume status` says it (its Same Storage)
		b.kv("Same Storage", strings.Join(v.SameStorage, ", ")+" records this storage too (a claim of either is refused while the other holds it; volctl volume deregister forgets one)")
	}
	if v.StagingLeft != "" { // a staging path mounted with no staging recorded there
		b.kv("Still Mounted", v.StagingLeft+s.advised(" (no staging recorded there: see the claims' errors; `volctl reconcile`)"))
	}
	if v.NodeExpansionOwed > 0 {
		// As `volume status` says them (its Node Expansion Owed, Expansion Pending): the
		// dashboard's detail showed neither, so a volume grown on the controller and not yet
		// on the node, or whose ControllerExpandVolume answer was lost, looked settled.
		owed := "to " + display.BytesExactly(v.NodeExpansionOwed)
		if v.NodeExpansionWaits != "" {
			owed += ": " + v.NodeExpansionWaits
		}
		b.kv("Node Expand Owed", owed)
	}
	if v.ExpansionPending > 0 {
		b.kv("Expansion Pending", "to "+display.BytesExactly(v.ExpansionPending)+": ControllerExpandVolume was sent and its answer not recorded, so the storage may be that size already; "+v.ExpansionPendingWay())
	}
	b.kv("Attached To", v.AttachedTo)
	if v.AttachedTo != "" {
		b.kv("Unpublish Owed", yesNo(v.UnpublishOwed()))
	}
	b.kv("Snapshot ID", v.SnapshotID)
	b.kv("Clone ID", v.CloneID)
	b.kv("Created", stamp(now, v.CreatedAt))
	b.kv("Updated", stamp(now, v.UpdatedAt))

	b.section("Capabilities")
	caps := [][]string{{"ACCESS MODE", "ATTACHMENT MODE"}}
	for _, c := range v.Capabilities {
		caps = append(caps, []string{string(c.AccessMode), string(c.AttachmentMode)})
	}
	b.table(caps, false)

	b.section("Topology")
	b.kv("Required", topologies(topologyReq(v.TopologyRequest, true)))
	b.kv("Preferred", topologies(topologyReq(v.TopologyRequest, false)))
	b.kv("Accessible", topologies(v.AccessibleTopology))

	b.section("Secrets")
	b.secrets(v.Secrets)
	b.section("Parameters")
	b.pairs(v.Parameters)
	b.section("Context")
	b.pairs(v.Context)

	return b.String()
}

func claimDetail(s *Styles, c engine.ClaimInfo, now time.Time, w int) string {
	var b detailBuilder
	b.init(s, w)
	b.kv("Claim ID", strconv.FormatInt(c.ID, 10))
	b.kv("Volume", c.VolumeID)
	b.kv("Alloc", c.Alloc)
	b.kv("Group", c.Group)
	b.kv("Mode", c.Mode)
	b.kv("Access Mode", string(c.AccessMode))
	b.kv("Attachment Mode", string(c.AttachmentMode))
	b.kv("State", c.Condition().String())
	b.kv("At Rest", yesNo(c.AtRest()))
	b.kv("Releasing", yesNo(c.Releasing))
	b.kv("Needs Reconcile", yesNo(c.NeedsReconcile))
	if c.Degraded {
		b.kv("Degraded", "yes: published before, its mount is gone and its restore has not finished; held until released")
	}
	b.kv("Target Path", c.TargetPath)
	switch {
	case c.TargetUnmounted:
		b.kv("Target Unmounted", c.Covered)
	case c.Covered != "":
		b.kv("Target Covered", c.Covered)
	}
	if len(c.MountAllows) > 0 {
		b.kv("Mount Flags", "asking for "+strings.Join(c.MountAllows, ", "))
	}
	b.kv("Last RPC", c.LastRPC)
	b.kv("Last Code", c.LastCode)
	b.kv("Last Error", c.LastError)
	b.kv("Created", stamp(now, c.CreatedAt))
	b.kv("Updated", stamp(now, c.UpdatedAt))
	b.section("Bind Mounts")
	binds := [][]string{{"DESTINATION", "READ ONLY", "PROPAGATION"}}
	for _, m := range c.Binds {
		binds = append(binds, []string{m.Destination, yesNo(m.ReadOnly), m.PropagationMode})
	}
	b.tableOrNone(binds, false)
	return b.String()
}

func pluginDetail(s *Styles, p engine.PluginInfo, now time.Time, w int) string {
	var b detailBuilder
	b.init(s, w)
	b.kv("ID", p.ID)
	b.kv("Type", string(p.Type))
	b.kv("Provider", p.Provider)
	b.kv("Version", p.Version)
	b.kv("Controller Socket", p.ControllerSocket)
	b.kv("Node Socket", p.NodeSocket)
	b.kv("Supervised", yesNo(p.Supervised))
	if sv := p.Supervision; sv != nil {
		gone := ""
		if !sv.AgentGoneBy.IsZero() {
			gone = ", its agent gone by " + stamp(now, sv.AgentGoneBy)
		}
		b.kv("Supervision", sv.Words()+" (recorded "+stamp(now, sv.At)+gone+")")
	}
	b.kv("Node ID", p.NodeID)
	b.kv("Max Volumes", maxVolumes(p.MaxVolumes))
	health := p.Health().String()
	if why := p.HealthWhy(); why != "" {
		health += ": " + why
	}
	b.kv("Health", health)
	b.kv("Probe Latency", p.ProbeLatency.String())
	b.kv("Probed", stamp(now, p.ProbedAt))
	b.kv("Fingerprinted", stamp(now, p.FingerprintedAt))
	b.kv("Volumes", strconv.Itoa(p.Volumes))
	b.kv("Topology", display.Segments(p.Topology))
	b.section("Capabilities")
	b.kv("Plugin", strings.Join(p.Capabilities.Plugin, " "))
	b.kv("Controller", strings.Join(p.Capabilities.Controller, " "))
	b.kv("Node", strings.Join(p.Capabilities.Node, " "))
	return b.String()
}

func eventDetail(s *Styles, e engine.EventInfo, now time.Time, w int) string {
	var b detailBuilder
	b.init(s, w)
	b.kv("Event ID", strconv.FormatInt(e.ID, 10))
	b.kv("Time", stamp(now, e.At))
	b.kv("Kind", e.Kind)
	b.kv("Volume", e.VolumeID)
	b.kv("Alloc", e.Alloc)
	b.kv("Plugin", e.PluginID)
	b.kv("RPC", e.RPC)
	b.kv("Code", e.Code)
	b.kv("Message", e.Message)
	return b.String()
}

// detailBuilder lays out "Key  = value" lines (values wrapped under themselves), sections and
// small tables, every line cut to the width so the viewport never wraps them again.
type detailBuilder struct {
	s     *Styles
	w     int
	lines []string
}

const keyWidth = 18

func (b *detailBuilder) init(s *Styles, w int) { b.s, b.w = s, max(w, 20) }

func (b *detailBuilder) line(l string) { b.lines = append(b.lines, fitLine(l, b.w)) }

// kv adds the line k = v. Both are cleaned: a key may be a plugin's too (a volume_context key,
// a spec's parameter).
func (b *detailBuilder) kv(k, v string) {
	k, v = clean(k), clean(v)
	if strings.TrimSpace(v) == "" {
		v = none
	}
	indent := 2 + keyWidth + 2
	wrapped := wrapCells(v, max(10, b.w-indent), " /,")
	// Padded by cells, not runes: a key of wide characters put its "=" out of line. A key
	// wider than its column goes on a line of its own, the value under it at the column's
	// indent: beside the key, the value was wrapped as if the key fitted, its first line ran
	// past the screen's edge and was cut, and what was cut was drawn nowhere
	// (TestDetailKeepsValuesUnderLongOrWideKeys; a CSI plugin's volume_context keys are often
	// long: storage.kubernetes.io/csiProvisionerIdentity).
	if kw := display.Width(k); kw > keyWidth {
		b.line("  " + b.s.Key.Render(k) + " =")
	} else {
		wrapped[0] = b.s.Key.Render(k+strings.Repeat(" ", keyWidth-kw)) + "= " + wrapped[0]
		b.line("  " + wrapped[0])
		wrapped = wrapped[1:]
	}
	for _, part := range wrapped {
		b.line("  " + strings.Repeat(" ", keyWidth+2) + part)
	}
}

// wrapped adds text in style, wrapped under itself at the claims' indent.
func (b *detailBuilder) wrapped(style lipgloss.Style, text string) {
	for _, l := range wrapCells(clean(text), max(10, b.w-2), " /,") {
		b.line("  " + style.Render(l))
	}
}

func (b *detailBuilder) section(title string) {
	b.lines = append(b.lines, "")
	b.line(" " + b.s.Section.Render(title))
}

func (b *detailBuilder) pairs(m map[string]string) {
	if len(m) == 0 {
		b.none()
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.kv(k, m[k])
	}
}

// secrets lists which secrets are set; their values never leave spec.Secrets.
func (b *detailBuilder) secrets(sec spec.Secrets) {
	if len(sec) == 0 {
		b.none()
		return
	}
	for _, k := range slices.Sorted(maps.Keys(sec)) {
		b.kv(k, spec.Redacted)
	}
}

// none says a section is empty.
func (b *detailBuilder) none() { b.line(b.s.Empty.Render("  none")) }

// tableOrNone prints rows as table does, or none when there is only the header.
func (b *detailBuilder) tableOrNone(rows [][]string, lastIsError bool) {
	if len(rows) == 1 {
		b.none()
		return
	}
	b.table(rows, lastIsError)
}

// errorLast says to table that the last column holds an error, which the others are narrowed
// for (shrinkForLast).
const errorLast = true

// table prints rows (the first is the header) in aligned columns; the last column wraps under
// itself, or is cut. When it holds an error (lastIsError), the others are narrowed to leave it
// room (shrinkForLast); the others' cells are what a table of data (a bind's destination, a
// capability) is read for, and are not: narrowed, two binds' destinations .../data and
// .../logs read the same (TestDetailTablesNarrowOnlyForAnErrorColumn).
func (b *detailBuilder) table(rows [][]string, lastIsError bool) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			r[i] = clean(c)
			if strings.TrimSpace(r[i]) == "" {
				r[i] = none
			}
			widths[i] = max(widths[i], textWidth(r[i]))
		}
	}
	last := len(widths) - 1
	if lastIsError {
		shrinkForLast(widths, rows[1:], b.w)
	}
	indent := 2
	for _, w := range widths[:last] {
		indent += w + colGap
	}
	for i, r := range rows {
		cells := make([]string, len(r))
		for j, c := range r[:last] {
			cells[j] = fit(c, widths[j], false, false)
		}
		// The last column (an error, a path) wraps under itself rather than being cut, while
		// it has room to.
		tail := []string{r[last]}
		if i > 0 && b.w-indent >= lastColumnRoom {
			tail = wrapCells(r[last], b.w-indent, " /,:")
		}
		cells[last] = tail[0]
		l := "  " + strings.TrimRight(strings.Join(cells, gap), " ")
		if i == 0 {
			l = b.s.Header.Render(fitLine(l, b.w))
		}
		b.line(l)
		for _, more := range tail[1:] {
			b.line(strings.Repeat(" ", indent) + more)
		}
	}
}

// Width a detail table's last column (an error, a path) is left at least, and that each other
// column keeps when it is narrowed for it (shrinkForLast).
const (
	lastColumnRoom = 20
	columnFloor    = 8
)

// shrinkForLast narrows the widest of a detail table's columns but the last, one cell at a
// time and none below columnFloor, until the last has lastColumnRoom cells of a screen w wide
// (or what it needs, when less): sized to their widest cells, an alloc named by a UUID or
// holding two volumes pushed the last column past the edge at 80 columns, where the line's
// cut dropped the error it held whole (TestDetailTablesKeepTheErrorColumnOnScreen). The cells
// narrowed are cut with "…" (fit). On a screen too narrow for that, nothing is narrowed: the
// line is cut, as before, rather than every column with it.
//
// The room the last column wants is its body's widest cell's, at most lastColumnRoom: its
// header alone, wider than its cells, is cut rather than the others.
func shrinkForLast(widths []int, body [][]string, w int) {
	last := len(widths) - 1
	want := 0
	for _, r := range body {
		want = max(want, textWidth(r[last]))
	}
	want = min(want, lastColumnRoom)
	used := 2
	for _, cw := range widths[:last] {
		used += cw + colGap
	}
	narrowed := slices.Clone(widths)
	for used+want > w {
		widest := -1
		for i, cw := range narrowed[:last] {
			if cw > columnFloor && (widest < 0 || cw > narrowed[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			return // as narrow as they go
		}
		narrowed[widest]--
		used--
	}
	copy(widths, narrowed)
}

func (b *detailBuilder) String() string { return strings.Join(b.lines, "\n") }

// fitLine cuts a styled line to w cells.
// wrapCells wraps s to width cells at spaces and at breakpoints (ansi.Wrap's), and breaks again
// any line ansi.Wrap leaves wider: it keeps a breakpoint that ends a line on it, one cell past
// the width, and fitLine then cut the line, "…" drawn over the breakpoint and the character
// before it: a path in an error lost a letter, its advice no longer followable as read
// (TestDetailWrapsAnErrorWithoutDroppingItsCharacters).
func wrapCells(s string, width int, breakpoints string) []string {
	var out []string
	for _, l := range strings.Split(ansi.Wrap(s, width, breakpoints), "\n") {
		if ansi.StringWidth(l) > width {
			out = append(out, strings.Split(ansi.Hardwrap(l, width, true), "\n")...)
			continue
		}
		out = append(out, l)
	}
	return out
}

func fitLine(l string, w int) string {
	if ansi.StringWidth(l) > w {
		return ansi.Truncate(l, w, "…")
	}
	return l
}

func yesNo(b bool) string { return display.YesNo(b) }

func maxVolumes(n int64) string { return display.MaxVolumes(n) }

func topologyReq(r *spec.TopologyRequest, required bool) []spec.Topology {
	switch {
	case r == nil:
		return nil
	case required:
		return r.Required
	}
	return r.Preferred
}

func topologies(ts []spec.Topology) string { return display.Topologies(ts) }

// stamp renders a time with how long ago it was.
func stamp(now, t time.Time) string { return display.Stamp(now, t) }
