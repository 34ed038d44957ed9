package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/volctl/volctl/internal/engine"
)

func footerLine(h *harness) string {
	lines := strings.Split(h.m.View(), "\n")
	return lines[len(lines)-1]
}

// Actions fit the state: delete is offered only for a volume that can be deleted, and D on
// one that cannot says why; forced detach has a key behind a confirmation naming the allocs it
// releases; the release dialog names the alloc's group; a read-only dashboard says actions
// are off when an action key is pressed.
func TestActionsFitTheState(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.keys("down", "down") // pg-data: a live claim
	if f := footerLine(h); strings.Contains(f, "D delete") {
		t.Errorf("delete offered for a volume with a live claim: %q", f)
	}
	h.keys("D")
	if h.m.dialog != nil {
		t.Fatal("D opened the delete dialog for a volume with a live claim")
	}
	if out := h.m.View(); !strings.Contains(out, `"pg-data" has 1 live claim: release or detach first`) {
		t.Errorf("D on a volume with a claim does not say why:\n%s", out)
	}
	h.keys("down") // scratch: no claims, its plugin deletes volumes
	if f := footerLine(h); !strings.Contains(f, "D delete") {
		t.Errorf("delete not offered for a volume that can be deleted: %q", f)
	}
	h.keys("down") // shared-media: its plugin (nfs) cannot delete volumes
	fake := h.fake
	fake.data.Volumes[4].ReadClaims = 0
	h.keys("r")
	h.keys("D")
	if out := h.m.View(); h.m.dialog != nil || !strings.Contains(out, `plugin "nfs" cannot delete volumes`) {
		t.Errorf("D on a volume its plugin cannot delete:\n%s", out)
	}

	// Forced detach, from the volume detail: the dialog names what it releases.
	h = newHarness(t, fixture(), Options{})
	h.keys("enter", "F")
	if h.m.dialog == nil {
		t.Fatal("F opened no dialog")
	}
	if out := h.m.View(); !strings.Contains(out, `"web[0]" (group "web")`) {
		t.Errorf("force-detach dialog does not name the alloc and its group:\n%s", out)
	}
	h.keys("tab", "enter")
	if got := actionCalls(h.fake.Calls()); !slices.Equal(got, []string{"Detach(mysql-0, true)"}) {
		t.Errorf("force detach called %v", got)
	}

	// The release dialog names the group.
	h = newHarness(t, fixture(), Options{})
	h.keys("2", "x")
	if out := h.m.View(); !strings.Contains(out, `alloc "web[0]" (group "web")`) {
		t.Errorf("release dialog lacks the alloc's group:\n%s", out)
	}

	// Read-only: an action key says actions are off.
	h = newHarness(t, fixture(), Options{ReadOnly: true})
	for _, k := range []string{"x", "d", "D", "F", "R"} {
		h.keys(k)
		if out := h.m.View(); h.m.dialog != nil || !strings.Contains(out, "actions are off") {
			t.Errorf("%s in a read-only dashboard does not say actions are off:\n%s", k, out)
		}
	}
}

// What k9s and lazygit users expect: the row position, a reconcile key with its result, a
// footer that fits at 80 columns uncut, and a first frame that says it is loading.
func TestDashboardBasics(t *testing.T) {
	fake := fixture()
	fake.data.Volumes = manyVolumes(200)
	h := newHarness(t, fake, Options{})
	h.keys("G")
	for i := 0; i < 25; i++ {
		h.keys("up")
	}
	if out := h.m.View(); !strings.Contains(out, "175 of 200") {
		t.Errorf("no row position \"175 of 200\":\n%s", out)
	}

	for _, w := range []int{80, 100} {
		for _, keys := range [][]string{{"1"}, {"2"}, {"3"}, {"4"}, {"1", "enter"}} {
			h := newHarness(t, fixture(), Options{})
			h.send(sizeMsg(w))
			h.keys(keys...)
			f := footerLine(h)
			if strings.Contains(f, "…") || !strings.Contains(f, "? help") || !strings.Contains(f, "q quit") {
				t.Errorf("at %d columns after %v the footer is cut or lacks help and quit: %q", w, keys, f)
			}
		}
	}

	fake = fixture()
	fake.reconciled = engine.ReconcileReport{Actions: []engine.ReconcileAction{{Kind: "published", VolumeID: "pg-data", Alloc: "db-0",
		Message: `published "pg-data" for "db-0"`}}}
	h = newHarness(t, fake, Options{})
	h.keys("R", "tab", "enter")
	if got := actionCalls(h.fake.Calls()); !slices.Equal(got, []string{"Reconcile()"}) {
		t.Errorf("R ran %v", got)
	}
	if out := h.m.View(); !strings.Contains(out, `reconciled: 1 action (published "pg-data" for "db-0")`) {
		t.Errorf("reconcile's result is not shown:\n%s", out)
	}

	// A pass that leaves problems names them, as volctl reconcile does, not only how many
	// (engine.Reconcile returns its report and an error then).
	fake = fixture()
	fake.reconciled = engine.ReconcileReport{Problems: []engine.ReconcileAction{{Kind: "failed", VolumeID: "metrics",
		Alloc: "job-0", Message: `claim "metrics" for alloc "job-0": plugin "hp2": socket missing`}}}
	h = newHarness(t, fake, Options{})
	h.keys("R", "tab", "enter")
	if out := h.m.View(); !strings.Contains(out, `plugin "hp2": socket missing`) {
		t.Errorf("reconcile's problems are not shown:\n%s", out)
	}

	m := New(t.Context(), Options{Engine: fixture(), Now: func() time.Time { return testNow }})
	m.Update(sizeMsg(80))
	if out := m.View(); !strings.Contains(out, "loading…") || strings.Contains(out, "no volumes yet") {
		t.Errorf("the first frame does not say it is loading:\n%s", out)
	}
}

func sizeMsg(w int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: 24} }

// Detach is offered only for a volume with claims on this host: on one without, the engine's
// detach does nothing, so the footer leaves it out and d says so instead of asking.
func TestDetachOnlyWithClaims(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.keys("down", "down", "down") // scratch: no claims
	if f := footerLine(h); strings.Contains(f, "d detach") {
		t.Errorf("detach offered for a volume with no claims: %q", f)
	}
	h.keys("d")
	if h.m.dialog != nil {
		t.Fatal("d opened the detach dialog for a volume with no claims")
	}
	if out := h.m.View(); !strings.Contains(out, `"scratch" has no claims on this host: nothing to detach`) {
		t.Errorf("d on a volume without claims does not say why:\n%s", out)
	}
	if got := actionCalls(h.fake.Calls()); len(got) != 0 {
		t.Errorf("d on a volume without claims called %v", got)
	}
	h.keys("up") // pg-data: a live claim
	if f := footerLine(h); !strings.Contains(f, "d detach") {
		t.Errorf("detach not offered for a volume with a claim: %q", f)
	}
}
