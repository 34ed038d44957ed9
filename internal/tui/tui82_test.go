package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/store"
)

// stateDirAdvise is what `volctl --state-dir /s tui` rewrites the commands the dashboard
// advises with (Options.Advice), as advice76_test.go has it.
func stateDirAdvise(s string) string {
	return strings.ReplaceAll(s, "`volctl ", "`volctl --state-dir /s ")
}

// TestDashboardVolumeOwedAnExpansionIsNotDrawnAllWell: volume v's ControllerExpandVolume was
// sent and its answer not recorded (ExpandMin set: an expand cut short). `volctl status --json`
// lists it under "owed" (engine.Owed: expand, "volctl reconcile does it"), and the volume's
// detail says "Expansion Pending"; yet the volume list draws its row in the normal tone,
// schedulable "yes", as all well: the row's tone is badOrWarn(!schedulable, Unsettled > 0 ||
// Leftover) (rows.go volumeRows), which knows of an owed unpublish (round 80) but of no other
// owed work. Correct: a volume with work owed that status lists (here an expansion whose
// answer is not recorded) is drawn wanting a look (warn), as one owed an unpublish is.
// Found by helper review82 (tui).
func TestDashboardVolumeOwedAnExpansionIsNotDrawnAllWell(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, _ := realEngineIn(t, dir, nil)
	createWriter(t, e, "v")
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(ctx, func(tx *store.Tx) error { return tx.Volumes().SetExpansionIntent("v", 8<<30, 0) })
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	owed, err := e.Owed(ctx)
	if err != nil || len(owed) != 1 || owed[0].VolumeID != "v" || owed[0].Kind != engine.OwedExpand {
		t.Fatalf("premise: status's owed work lists v's expansion: %+v, %v", owed, err)
	}

	h := newHarness(t, e, Options{})
	h.send(tea.WindowSizeMsg{Width: 160, Height: 40})
	rows := h.m.tabs[tabVolumes].rows
	if len(rows) != 1 {
		t.Fatalf("premise: the dashboard lists one volume: %+v", h.m.data.Volumes)
	}
	if rows[0].tone == toneNormal {
		t.Errorf("volume v, whose ControllerExpandVolume answer is not recorded (status --json lists it owed: %q), is drawn as all well: %q, tone normal; want it to want a look (warn)",
			owed[0].What, strings.Join(rows[0].cells, " "))
	}
}

// TestDashboardReadFailureAdviceCarriesTheStateDir: `volctl --state-dir /s tui` rewrites every
// command it advises to carry the state dir (Options.Advice, advisedEngine): an action's error,
// a probe's, a detail's. A refresh that fails is the exception: the store's own words for a read
// kept from the state (a volctl stopped with ^Z holding the write lock through a checkpoint:
// store.StuckHolders, "... `volctl reconcile` then finishes what it left half-done") reach the
// status line, and the box of a state that cannot be read, as the engine wrote them
// (live.read keeps Dashboard's error as it is; advisedEngine.Dashboard rewrites the data alone).
// Followed as read, `volctl reconcile` reconciles the default state dir, not the one the
// dashboard shows. Correct: the read's error is shown with its commands carrying --state-dir,
// as every other text on the dashboard is.
// Found by helper review82 (tui).
func TestDashboardReadFailureAdviceCarriesTheStateDir(t *testing.T) {
	fake := fixture()
	fake.dashErr = errors.New("dashboard: the write lock is held by pid 4242: volctl volume claim db, stopped by a signal (^Z or SIGSTOP) for 10s, " +
		"which keeps it until resumed or ended: resume it (`kill -CONT 4242`, or `fg` in its shell) or end it (`kill 4242; kill -CONT 4242`: " +
		"a stopped volctl takes the SIGTERM once resumed; `volctl reconcile` then finishes what it left half-done), and run this again")
	h := newHarness(t, fake, Options{Advice: stateDirAdvise})
	h.send(tea.WindowSizeMsg{Width: 600, Height: 40})
	if h.m.live.err == nil {
		t.Fatalf("premise: the dashboard's read failed: %v", h.m.live.err)
	}
	line := ""
	for _, l := range strings.Split(h.m.View(), "\n") {
		if strings.Contains(l, "read failed") {
			line = strings.TrimSpace(l)
		}
	}
	if !strings.Contains(line, "reconcile`") {
		t.Fatalf("premise: the status line says the read failed, with its advice: %q", line)
	}
	if !strings.Contains(line, "`volctl --state-dir /s reconcile`") {
		t.Errorf("a failed read's advice is shown without the state dir the dashboard was given; want `volctl --state-dir /s reconcile`: %q", line)
	}
}

// TestDashboardDeleteRefusalOfAVolumeWhosePluginIsNotRegisteredSaysTheWayOut: volume orphan's
// plugin "gone" was deregistered with --force, which leaves its volumes. D on its row is
// refused by the dashboard itself (Model.cannotDelete) with "plugin "gone" is not registered:
// nothing can delete volume "orphan"'s storage": untrue, and with no way out. Registered again
// (`volctl plugin register`, what the engine's own refusal advises: "plugin %q is not
// registered (volctl plugin register)"), the plugin deletes it; or `volctl volume deregister
// orphan` forgets the volume. Correct: the refusal says what deletes it (register the plugin
// again) or forgets it, naming the command (carrying --state-dir), not that nothing can.
// Found by helper review82 (tui).
func TestDashboardDeleteRefusalOfAVolumeWhosePluginIsNotRegisteredSaysTheWayOut(t *testing.T) {
	said := deleteRefusedOn(t, "orphan", "gone")
	if strings.Contains(said, "nothing can delete") || !strings.Contains(said, "`volctl --state-dir /s volume deregister orphan`") || !strings.Contains(said, "`volctl --state-dir /s plugin register`") {
		t.Errorf("D on volume orphan, whose plugin is not registered, says %q; want the way out named (register the plugin again, `volctl --state-dir /s plugin register ...`, "+
			"then delete; or `volctl --state-dir /s volume deregister orphan`), not that nothing can delete its storage", said)
	}
}

// TestDashboardDeleteRefusalOfALostCapabilityNamesTheCommand: volume archive's plugin nfs has
// no CREATE_DELETE_VOLUME. `volctl volume delete archive` says "use `volctl volume deregister`
// to forget the volume" (or, for one volctl created, names `volctl volume deregister archive`);
// the dashboard refuses D itself (Model.cannotDelete) with "... start it with one to delete
// volume "archive", or forget the volume, which leaves its storage": no command is named, so the
// advice cannot be followed as read, and what the user types from memory does not carry the
// --state-dir the dashboard was given (its own advice is rewritten: Styles.advised). Correct:
// the refusal names `volctl volume deregister archive`, carrying --state-dir.
// Found by helper review82 (tui).
func TestDashboardDeleteRefusalOfALostCapabilityNamesTheCommand(t *testing.T) {
	said := deleteRefusedOn(t, "archive", "nfs")
	if !strings.Contains(said, "cannot delete volumes") {
		t.Fatalf("premise: the refusal says the plugin cannot delete volumes: %q", said)
	}
	if !strings.Contains(said, "`volctl --state-dir /s volume deregister archive`") {
		t.Errorf("D on volume archive, whose plugin has no CREATE_DELETE_VOLUME, says %q; want the way to forget it named, `volctl --state-dir /s volume deregister archive`", said)
	}
}

// deleteRefusedOn is what D says on volume id of plugin (the fixture's plugins), in a dashboard
// given --state-dir /s, which refuses it itself (Model.cannotDelete) rather than asking.
func deleteRefusedOn(t *testing.T, id, plugin string) string {
	t.Helper()
	fake := fixture()
	fake.data.Volumes = append(fake.data.Volumes, engine.VolumeSummary{ID: id, Namespace: "default", Name: id,
		PluginID: plugin, State: "ready", CapacityBytes: 1 << 30, CreatedAt: ago(time.Hour)})
	h := newHarness(t, fake, Options{Advice: stateDirAdvise})
	h.send(tea.WindowSizeMsg{Width: 200, Height: 40})
	h.keys("/", id, "enter")
	if got := h.selected(); got != id {
		t.Fatalf("premise: volume %s selected, got %q", id, got)
	}
	h.keys("D")
	if h.m.dialog != nil {
		t.Fatalf("premise: D on volume %s (plugin %s) is refused, not asked", id, plugin)
	}
	if h.m.failure != nil {
		return h.m.failure.err
	}
	return h.m.status.text
}
