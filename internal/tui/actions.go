package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
)

// The actions on a selected row — release a claim, detach a volume, delete a volume — each
// behind a confirmation dialog, run in the background with a spinner, reported in the status
// line.

type actionKind int

const (
	actRelease actionKind = iota
	actDetach
	actDelete
	actForceDetach
	actReconcile
)

// action is one operation the user asked for.
type action struct {
	kind actionKind
	// volume and alloc are what the engine is asked to act on: the IDs as the state has them.
	// volumeShown and allocShown are the same as the dashboard shows them, scrubbed of secrets,
	// which its questions word (engine.VolumeSummary.Key).
	volume, volumeShown string
	alloc, allocShown   string // release only
	group               string // release: the alloc's group, when it belongs to one
	allocs              []string
	// asked are the claims the question was about, by ID: a release's one, a detach's all. The
	// dialog stays open while reads come, and the engine acts on the volume as it is then.
	asked []int64
	// drawn is the created-at of the volume's record as the row (or detail) the key was
	// pressed on showed it, read up to a refresh earlier: the record the question reads when it
	// opens may already be another, made under the same ID since.
	drawn time.Time
	// record is which record of the volume the question was about, read as it opened (a
	// detach, force-detach or delete): the volume may be deleted and created again under the
	// same ID, with new storage, before the user confirms. Nil until the read answers.
	record *volumeRecord
	// asking numbers the question (Model.questions): the record read it sent answers to it
	// alone. By the volume alone, a cancelled question's late read was taken by the next one
	// on the volume, its record the one before a delete and create again, and the delete the
	// user confirmed on the volume as drawn was refused
	// (TestStaleRecordReadOfACancelledQuestionIsNotTakenByTheNext).
	asking uint64
	// plugin is the volume's plugin, which the action's RPCs wait on: named while it runs.
	plugin string
}

// volumeRecord tells one record of a volume from another of the same ID: the plugin's ID for
// its storage and when volctl recorded it.
type volumeRecord struct {
	externalID string
	createdAt  time.Time
	err        error // the read failed: which record it was is not known
}

// recordMsg is the read of which record a question (action.asking) is about.
type recordMsg struct {
	question uint64
	record   volumeRecord
}

// readRecord reads which record of a's volume its question is about, off the UI goroutine.
func readRecord(ctx context.Context, eng Engine, a action) tea.Cmd {
	volume, question := a.volume, a.asking
	return func() tea.Msg {
		v, err := eng.Volume(ctx, volume)
		if err == nil && v.ID != volume {
			err = fmt.Errorf("volume %q: %w", volume, engine.ErrNotFound)
		}
		return recordMsg{question: question, record: volumeRecord{externalID: v.ExternalID, createdAt: v.CreatedAt, err: err}}
	}
}

func (a action) title() string {
	return [...]string{"Release claim", "Detach volume", "Delete volume", "Force-detach volume", "Reconcile"}[a.kind]
}

func (a action) button() string {
	return [...]string{"Release", "Detach", "Delete", "Force-detach", "Reconcile"}[a.kind]
}

func (a action) question() string {
	switch a.kind {
	case actRelease:
		of := fmt.Sprintf("alloc %q", a.shownAlloc())
		if a.group != "" {
			of += fmt.Sprintf(" (group %q)", a.group)
		}
		return fmt.Sprintf("Release the claim of %s on volume %q? Its mount is unpublished, and the volume unstaged when no other claim uses it.", of, a.shownVolume())
	case actDetach:
		// The claims the detach releases (asked), named as force detach names them: counted
		// from the open detail's volume, which a refresh updates a read after the lists, the
		// question said "nothing is released" of a claim made meanwhile, which the detach then
		// released (TestDetachAsksAboutTheClaimsItReleases).
		switch len(a.allocs) {
		case 0:
			return fmt.Sprintf("Detach volume %q? It has no claims on this host: what it still records of its staging or attachment is undone, as reconcile does.", a.shownVolume())
		case 1:
			return fmt.Sprintf("Detach volume %q? The claim of %s on this host is released and its mount undone.", a.shownVolume(), a.allocs[0])
		}
		return fmt.Sprintf("Detach volume %q? The %d claims on this host, of %s, are released and their mounts undone.", a.shownVolume(), len(a.allocs), joinAnd(a.allocs))
	case actForceDetach:
		q := fmt.Sprintf("Force-detach volume %q? Its plugin's node service is not asked: volctl unmounts its own target and staging paths and frees the claims whatever happens.", a.shownVolume())
		if len(a.allocs) == 0 {
			return q + " It has no claims on this host."
		}
		return q + " Released: the claims of " + joinAnd(a.allocs) + "."
	case actReconcile:
		return "Reconcile now? Every claim, volume and snapshot left half-way is driven to where it was going, as volctl reconcile does."
	}
	return fmt.Sprintf("Delete volume %q? The plugin deletes its storage; this cannot be undone.", a.shownVolume())
}

// shownVolume and shownAlloc name what the action is about as the dashboard shows it.
func (a action) shownVolume() string { return cmp.Or(a.volumeShown, a.volume) }
func (a action) shownAlloc() string  { return cmp.Or(a.allocShown, a.alloc) }

// joinAnd lists names as a, b and c.
func joinAnd(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func (a action) doing() string {
	switch a.kind {
	case actRelease:
		return fmt.Sprintf("releasing the claim of %q on %q", a.shownAlloc(), a.shownVolume())
	case actDetach:
		return fmt.Sprintf("detaching %q", a.shownVolume())
	case actForceDetach:
		return fmt.Sprintf("force-detaching %q", a.shownVolume())
	case actReconcile:
		return "reconciling"
	}
	return fmt.Sprintf("deleting %q", a.shownVolume())
}

// actionDoneMsg reports how an action ended.
type actionDoneMsg struct {
	a    action
	text string
	err  error
}

// run performs the action through the engine, off the UI goroutine, its result and error
// scrubbed of the state's secrets before they are shown.
func (a action) run(ctx context.Context, eng Engine) tea.Cmd {
	return func() tea.Msg { return scrubbed(ctx, eng, a.perform(ctx, eng)) }
}

// scrubbed has an action's result text and error scrubbed of every secret value the state
// holds, as the CLI has its output and errors (Factory.RedactError): a plugin may echo a secret
// into its errors or its node ID, which a detach's warning names. When the secrets cannot be
// read, the text is withheld, saying why. The read is one of the local state, not cut short by
// the dashboard's end.
func scrubbed(ctx context.Context, eng Engine, msg actionDoneMsg) actionDoneMsg {
	ctx = context.WithoutCancel(ctx)
	if err := redacted(ctx, eng, &msg.text); err != nil && msg.text != "" {
		msg.text = fmt.Sprintf("%s done; its result is withheld: reading the state to redact secrets from it: %v", msg.a.title(), err)
	}
	msg.err = redactedError(ctx, eng, msg.err)
	return msg
}

// scrubbedError is an error shown with its secrets scrubbed, that still unwraps to itself.
type scrubbedError struct {
	err error
	msg string
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// perform runs the action and says how it ended.
func (a action) perform(ctx context.Context, eng Engine) actionDoneMsg {
	if err := a.changed(ctx, eng); err != nil {
		return actionDoneMsg{a: a, err: err}
	}
	switch a.kind {
	case actRelease:
		res, err := eng.Release(ctx, a.volume, a.alloc)
		if err != nil {
			return actionDoneMsg{a: a, err: err}
		}
		return releaseReport(a, res)
	case actDetach, actForceDetach:
		res, err := eng.Detach(ctx, a.volume, a.kind == actForceDetach)
		if err != nil && len(res.Released) == 0 && len(res.Failed) == 0 && len(res.Warnings) == 0 && res.DetachedFrom == "" && res.Unstaged == "" {
			return actionDoneMsg{a: a, err: err} // nothing was done
		}
		// Done in part comes with the error: the claims released are said beside those that
		// failed, as `volume detach` says both; before, the error alone, and a user who
		// confirmed two claims' release read "Detach failed" of one whose other was released
		// (TestDetachThatFailsInPartSaysWhatItReleased).
		return detachReport(a, res, err)
	case actReconcile:
		rep, err := eng.Reconcile(ctx)
		if err != nil && rep.OK() {
			return actionDoneMsg{a: a, err: err}
		}
		// With problems left, the engine's error only counts them: the report names them. A
		// pass cut short says so first, its problems those found before: "N problems left"
		// alone read as all that was left (TestDashboardReconcileCutShortAfterAProblemSaysSo,
		// as `volctl reconcile` says it).
		msg := reconcileReport(a, rep)
		if err != nil && !rep.Whole() {
			msg.err = fmt.Errorf("%w; %v", err, msg.err)
		}
		return msg
	}
	if err := eng.DeleteVolume(ctx, a.volume); err != nil {
		return actionDoneMsg{a: a, err: err}
	}
	return actionDoneMsg{a: a, text: fmt.Sprintf("deleted volume %q", a.volume)}
}

// changed reads the volume a release or detach is about as the action starts, and says, as an
// error, how its claims differ from those the question named: a claim made since (a detach would
// release it, unnamed; a forced one unmount its target without asking the plugin), or the
// alloc's claim released and made again (a release would free the new one). A claim released
// meanwhile is no change: less is done than was confirmed. The engine acts on what it finds
// then, so this narrows the window to the time between two of its calls.
func (a action) changed(ctx context.Context, eng Engine) error {
	if a.kind == actReconcile {
		return nil
	}
	v, err := eng.Volume(ctx, a.volume)
	switch {
	case volumeGone(v, err, a.volume):
		return fmt.Errorf("volume %q no longer exists: nothing to %s", a.volume, a.verb())
	case err != nil:
		return fmt.Errorf("%s %q: read it first, to act only on what was confirmed: %w; nothing done", a.verb(), a.volume, err)
	}
	if a.kind != actRelease {
		switch r := a.record; {
		case r == nil:
			return fmt.Errorf("volume %q: which of its records the question was about was not read yet: nothing done; look at it again and press %s", a.volume, a.key())
		case r.err != nil:
			return fmt.Errorf("volume %q: reading which of its records the question was about: %v: nothing done; look at it again and press %s", a.volume, r.err, a.key())
		case !r.createdAt.Equal(a.drawn):
			return fmt.Errorf("volume %q was deleted and created again since the list was drawn (new storage, recorded %s): nothing done to it; look at it again and press %s",
				a.volume, r.createdAt.UTC().Format(time.RFC3339), a.key())
		case r.externalID != v.ExternalID || !r.createdAt.Equal(v.CreatedAt):
			return fmt.Errorf("volume %q was deleted and created again since the question (new storage): nothing done to it; look at it again and press %s", a.volume, a.key())
		}
	}
	if a.kind == actDelete {
		return nil
	}
	if a.kind == actRelease {
		for _, c := range v.Claims {
			// As Release finds the claim, in NFC: compared byte for byte, a claim of the
			// alloc made since, stored in NFC beside a decomposed name asked about, passed,
			// and the release freed it (TestReleaseOfADecomposedAllocRefusesTheClaimMadeSinceInNFC).
			if engine.SameAlloc(c.Alloc, a.alloc) && !slices.Contains(a.asked, c.ID) {
				return fmt.Errorf("the claim of alloc %q on volume %q is not the one confirmed: released and made again since (claim %d now): nothing released; look at it again and press x",
					a.alloc, a.volume, c.ID)
			}
		}
		return nil
	}
	var since []string
	for _, c := range v.Claims {
		if !slices.Contains(a.asked, c.ID) {
			since = append(since, strconv.Quote(c.Alloc))
		}
	}
	if len(since) > 0 {
		return fmt.Errorf("volume %q has claims made since the question, which it did not name: %s of %s: nothing detached; look at it again and press %s",
			a.volume, plural(len(since), "claim"), joinAnd(since), a.key())
	}
	return nil
}

// releaseReport words a release's result, as volume release says it: one that waited for
// another volctl's release of the claim says so (engine.ReleaseResult.ReleasedMeanwhile).
func releaseReport(a action, res engine.ReleaseResult) actionDoneMsg {
	switch {
	case res.ReleasedMeanwhile:
		return actionDoneMsg{a: a, text: fmt.Sprintf("the claim of %q on %q was released by another volctl while this release waited: nothing left to release", a.alloc, a.volume)}
	case !res.Released:
		return actionDoneMsg{a: a, text: fmt.Sprintf("alloc %q held no claim on %q: nothing to release", a.alloc, a.volume)}
	}
	return actionDoneMsg{a: a, text: fmt.Sprintf("released the claim of %q on %q", a.alloc, a.volume)}
}

func detachReport(a action, res engine.DetachResult, err error) actionDoneMsg {
	if err == nil && len(res.Released) == 0 && len(res.Failed) == 0 && res.Unstaged == "" && res.DetachedFrom == "" && res.LeftAttached == "" && len(res.Warnings) == 0 {
		// Nothing was left to do (a reconcile undid the leftover meanwhile): said as the
		// command line says it, not "detached" (TestDashboardDetachOfALeftoverUndoneMeanwhileSaysNothingWasDetached).
		what := "has no claims"
		if len(res.ReleasedMeanwhile) > 0 {
			what = "has no claims left (another volctl released them meanwhile)"
		}
		return actionDoneMsg{a: a, text: fmt.Sprintf("%q %s: nothing to detach", a.shownVolume(), what)}
	}
	verb := "detached"
	if a.kind == actForceDetach {
		verb = "force-detached"
	}
	text := fmt.Sprintf("%s %q: released %s", verb, a.volume, plural(len(res.Released), "claim"))
	if (err != nil || len(res.Failed) > 0) && len(res.Released) > 0 {
		// Failed in part: which allocs lost their volume, beside those that failed.
		allocs := make([]string, len(res.Released))
		for i, c := range res.Released {
			allocs[i] = strconv.Quote(c.Alloc)
		}
		text += " (of " + strings.Join(allocs, ", ") + ")"
	}
	if res.Unstaged != "" {
		text += fmt.Sprintf(", unstaged it at %s", res.Unstaged)
	}
	if res.DetachedFrom != "" {
		// The unpublish its recorded attachment was owed, sent (engine.DetachResult.DetachedFrom):
		// "released 0 claims" alone said nothing was done (TestForcedDetachReportSaysTheNodeItDetachedFrom).
		text += fmt.Sprintf(", detached it from node %q", res.DetachedFrom)
	}
	if res.LeftAttached != "" && err == nil {
		text += fmt.Sprintf("; it stays recorded attached to node %q, its ControllerUnpublishVolume owed: reconcile sends it once the plugin takes it", res.LeftAttached)
	}
	if n := len(res.ReleasedMeanwhile); n > 0 {
		text += fmt.Sprintf(" (another volctl released %s while this detach waited)", plural(n, "claim"))
	}
	if len(res.Warnings) > 0 {
		text += "; " + strings.Join(res.Warnings, "; ")
	}
	switch {
	case err != nil:
		// The engine's error words each failure (its RPC's answer), which a claim's recorded
		// last error may not hold yet.
		return actionDoneMsg{a: a, err: fmt.Errorf("%s, %d failed: %w", text, len(res.Failed), err)}
	case len(res.Failed) > 0:
		var errs []string
		for _, c := range res.Failed {
			errs = append(errs, fmt.Sprintf("alloc %q: %s", c.Alloc, c.LastErrorText()))
		}
		return actionDoneMsg{a: a, err: fmt.Errorf("%s, %d failed: %s", text, len(res.Failed), strings.Join(errs, "; "))}
	}
	return actionDoneMsg{a: a, text: text}
}

// reconcileReport words a reconcile's result: what it did, and what is still wrong (an error,
// shown whole in a box when long).
func reconcileReport(a action, rep engine.ReconcileReport) actionDoneMsg {
	text := "reconciled: nothing to do"
	if len(rep.Actions) > 0 {
		text = "reconciled: " + plural(len(rep.Actions), "action")
		var did []string
		for _, x := range rep.Actions {
			did = append(did, x.Message)
		}
		text += " (" + strings.Join(did, "; ") + ")"
	}
	if rep.OK() {
		return actionDoneMsg{a: a, text: text}
	}
	var probs []string
	for _, p := range rep.Problems {
		probs = append(probs, p.Message)
	}
	return actionDoneMsg{a: a, err: fmt.Errorf("%s; %s left: %s", text, plural(len(rep.Problems), "problem"), strings.Join(probs, "; "))}
}

// key is the key that asks for the action.
func (a action) key() string {
	return [...]string{"x", "d", "D", "F", "R"}[a.kind]
}

func (a action) verb() string {
	return [...]string{"release", "detach", "delete", "force-detach", "reconcile"}[a.kind]
}

func (a action) done() string {
	return [...]string{"Release done", "Detach done", "Delete done", "Force-detach done", "Reconcile done"}[a.kind]
}

func (a action) failed() string {
	return [...]string{"Release failed", "Detach failed", "Delete failed", "Force-detach failed", "Reconcile left problems"}[a.kind]
}

func plural(n int, noun string) string { return display.Plural(n, noun) }

// confirm is the dialog in front of an action. Cancel has the focus when it opens, so a
// stray Enter does nothing harmful.
type confirm struct {
	c      *Common
	a      action
	accept bool // focus on the action's button rather than Cancel
	text   scrolled
}

func newConfirm(c *Common, a action) *confirm { return &confirm{c: c, a: a} }

// Update handles a key; done says the dialog closed, run that the user chose the action.
func (d *confirm) Update(msg tea.KeyMsg) (done, run bool) {
	k := d.c.Keys
	switch {
	case matches(msg, k.FocusNext), matches(msg, k.FocusPrev):
		d.accept = !d.accept
	case matches(msg, k.Choose):
		return true, d.accept
	case matches(msg, k.Cancel):
		return true, false
	default:
		d.text.Update(d.c, msg)
	}
	return false, false
}

// View draws the dialog box; the root centres it over the body.
func (d *confirm) View() string {
	s := d.c.Styles
	buttons := button(s, "Cancel", !d.accept) + "   " + button(s, d.a.button(), d.accept)
	return d.text.box(d.c, d.a.title()+"?", d.a.question(), buttons)
}

// failure shows an action's result in full when the status line would cut it, an error or a
// success with warnings; any of the dialog's keys closes it.
type failure struct {
	c     *Common
	title string
	err   string
	text  scrolled
}

func (f *failure) View() string {
	return f.text.box(f.c, f.title, f.err, button(f.c.Styles, "OK", true))
}

// scrolled is a dialog's text that may be taller than the screen: a plugin's error may be
// 4 KiB, a forced detach's question names every alloc it releases. Cut at the screen's foot,
// its end (where an error says what to do) and the dialog's buttons were never drawn; it shows
// as much as fits, says which lines, and scrolls with the movement keys.
type scrolled struct{ offset int } // the first line shown

// Update scrolls the text.
func (t *scrolled) Update(c *Common, msg tea.KeyMsg) {
	k, page := c.Keys, max(1, textRoom(c)-1)
	switch {
	case matches(msg, k.Up):
		t.offset--
	case matches(msg, k.Down):
		t.offset++
	case matches(msg, k.PageUp):
		t.offset -= page
	case matches(msg, k.PageDown):
		t.offset += page
	case matches(msg, k.Top):
		t.offset = 0
	case matches(msg, k.Bottom):
		t.offset = maxHeight * 100 // the last page: box clamps it
	}
}

// box is the dialog of title, text and buttons, with as much of the text as the body has room
// for from the line scrolled to.
func (t *scrolled) box(c *Common, title, text, buttons string) string {
	lines := strings.Split(lipgloss.NewStyle().Width(dialogInner(c)).Render(clean(text)), "\n")
	if n, room := len(lines), textRoom(c); n > room {
		t.offset = max(0, min(t.offset, n-room))
		lines = lines[t.offset : t.offset+room]
		buttons += c.Styles.Dim.Render(fmt.Sprintf("  %d-%d/%d, ↑↓ scroll", t.offset+1, t.offset+room, n))
	}
	s := c.Styles
	inner := dialogInner(c)
	body := lipgloss.JoinVertical(lipgloss.Left,
		s.DialogTitle.Render(title),
		"",
		strings.Join(lines, "\n"),
		"",
		fitLine(buttons, inner),
	)
	return s.Dialog.Width(inner + 4).Render(body)
}

// textRoom is how many lines of a dialog's text the body has room for: the box's borders,
// title, blank lines and buttons take six.
func textRoom(c *Common) int { return max(1, bodyHeight(c)-6) }

// dialogInner is the width of a dialog's text: the box's, less the border and padding.
func dialogInner(c *Common) int { return max(10, min(64, c.Width-4)-6) }

func button(s *Styles, label string, focused bool) string {
	if focused {
		return s.ButtonFocused.Render("[ " + label + " ]") // brackets mark focus without colour
	}
	return s.Button.Render("  " + label + "  ")
}

// statusLine is the line above the help: a running action's spinner, or the last result for a
// few seconds (statusTTL, an error twice as long); the views' own state stays on its right.
type statusLine struct {
	c       *Common
	text    string
	failed  bool
	setAt   time.Time // when text was set, by the clock in Common
	seq     int       // which message an expiry timer is for
	running *action
	since   time.Time // when the running action started
	spin    spinner.Model
}

// statusTTL is how long a message stays in the status line.
const statusTTL = 5 * time.Second

// statusExpiredMsg clears the message it was armed for, unless a newer one replaced it.
type statusExpiredMsg struct{ seq int }

func newStatusLine(c *Common) statusLine {
	return statusLine{c: c, spin: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(c.Styles.Spinner))}
}

// start shows a's spinner and returns the command that keeps it turning.
func (l *statusLine) start(a action) tea.Cmd {
	l.running, l.text, l.failed, l.since = &a, "", false, l.c.Now()
	return l.c.after(l.spin.Spinner.FPS, l.spin.Tick)
}

// done replaces the spinner with an action's result.
func (l *statusLine) done(msg actionDoneMsg) tea.Cmd {
	l.running = nil
	if msg.err != nil {
		return l.set(msg.err.Error(), true)
	}
	return l.set(msg.text, false)
}

// set shows text and returns the timer that clears it.
func (l *statusLine) set(text string, failed bool) tea.Cmd {
	l.text, l.failed, l.setAt = clean(text), failed, l.c.Now()
	l.seq++
	seq := l.seq
	return l.c.after(l.ttl(), func() tea.Msg { return statusExpiredMsg{seq: seq} })
}

func (l *statusLine) ttl() time.Duration {
	if l.failed {
		return 2 * statusTTL
	}
	return statusTTL
}

// expire clears the message msg was armed for.
func (l *statusLine) expire(msg statusExpiredMsg) {
	if msg.seq == l.seq {
		l.text, l.failed = "", false
	}
}

// shown reports whether the message is still fresh: a frame drawn after its time is up (the
// timer not yet delivered) does not show it either.
func (l *statusLine) shown() bool {
	return l.text != "" && l.c.Now().Sub(l.setAt) < l.ttl()
}

// waited says what the running action waits on and for how long: its RPCs wait up to CSI's
// long timeout at each of the engine's attempts, minutes on a plugin that never answers, and a
// spinner alone said the same at the first second as at the sixth minute. brief leaves out the
// word "plugin", for a narrow screen.
func (l *statusLine) waited(brief bool) string {
	var parts []string
	if p := l.running.plugin; p != "" && brief {
		parts = append(parts, strconv.Quote(p))
	} else if p != "" {
		parts = append(parts, fmt.Sprintf("plugin %q", p))
	}
	if d := l.c.Now().Sub(l.since).Truncate(time.Second); d >= time.Second {
		parts = append(parts, d.String())
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// minDoing is the least of what a running action does the status line keeps ("releasing the…")
// before it shortens what the action waits on.
const minDoing = 16

// spinTick advances the spinner while an action runs; the chain stops when it ends.
func (l *statusLine) spinTick(msg spinner.TickMsg) tea.Cmd {
	if l.running == nil {
		return nil
	}
	l.spin, _ = l.spin.Update(msg)
	return l.c.after(l.spin.Spinner.FPS, l.spin.Tick)
}

// View renders the line with right, the dashboard's own state, at the right edge, or brief
// when both do not fit: the message matters more. While an action runs, which may be minutes
// on a plugin that hangs, what must be said of the state (stale: its reads failing, or slow)
// keeps its place, the action's words cut to make room: before, they took the whole line for
// as long as the action ran, and the lists were drawn as if fresh while every read failed
// (TestReadFailureIsSaidWhileAnActionRuns).
func (l *statusLine) View(right, brief, stale string) string {
	s := l.c.Styles
	var left, note string
	switch {
	case l.running != nil:
		if l.shown() {
			note = "  " + s.Dim.Render(l.text)
		}
		left = l.spin.View() + " " + l.running.doing() + l.waited(false) + "…" + note
	case !l.shown():
	case l.failed:
		left = s.StatusErr.Render("error: " + l.text)
	default:
		left = s.StatusOK.Render(l.text)
	}
	if lipgloss.Width(left)+lipgloss.Width(right)+3 > l.c.Width {
		right = brief
	}
	switch {
	case lipgloss.Width(left)+lipgloss.Width(right)+3 <= l.c.Width:
	case left == "":
		right = fitLine(right, max(0, l.c.Width-3)) // no message: the state, cut, rather than a blank line
	case l.running != nil:
		right = stale
	default:
		right = "" // for the few seconds a message shows, it has the whole line
	}
	right = s.Dim.Render(right)
	room := l.c.Width - 1 - lipgloss.Width(right) - 2
	if l.running != nil && lipgloss.Width(left) > room {
		// What it does is cut, not whom it waits on nor for how long (waited): that came last
		// and was cut first, below about 80 columns. The word "plugin" goes when what it does
		// would keep less than minDoing; a message after it (q's "press q again") keeps what
		// room is left, its end cut.
		head, tail, doing := l.spin.View()+" ", l.waited(false)+"…", l.running.doing()
		w := room - lipgloss.Width(head) - lipgloss.Width(tail) // for what it does and the message
		if w < minDoing {
			tail = l.waited(true) + "…"
			w = room - lipgloss.Width(head) - lipgloss.Width(tail)
		}
		left = head + fitLine(doing, max(1, w-lipgloss.Width(note), min(minDoing, w))) + tail + note
	}
	left = fitLine(left, max(0, room))
	spaces := max(1, l.c.Width-1-lipgloss.Width(left)-lipgloss.Width(right))
	return " " + left + strings.Repeat(" ", spaces) + right
}
