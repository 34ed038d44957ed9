package tui

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// With Options.Advice (volctl tui given --state-dir), what the dashboard writes itself carries
// it too, as what the engine answers does (advisedEngine, TestDashboardAdviceCarriesTheStateDirGiven
// in internal/cli): an empty view's hint ("`volctl volume create FILE` adds one"), and the
// results of its actions (a reconcile's problems). Found by helper review76 (tui).
func TestDashboardOwnAdviceCarriesTheStateDirGiven(t *testing.T) {
	advise := func(s string) string { return strings.ReplaceAll(s, "`volctl ", "`volctl --state-dir /s ") }
	fake := fixture()
	fake.data = engine.Dashboard{}
	h := newHarness(t, fake, Options{Advice: advise})
	if out := h.m.View(); !strings.Contains(out, "`volctl --state-dir /s volume register FILE`") {
		t.Errorf("the empty volumes view's hint does not carry the state dir:\n%s", out)
	}
	fake = fixture()
	fake.reconciled = engine.ReconcileReport{Problems: []engine.ReconcileAction{{Kind: "failed", VolumeID: "metrics",
		Message: "plugin \"hp2\": socket missing; run `volctl reconcile` again"}}}
	h = newHarness(t, fake, Options{Advice: advise})
	h.keys("R", "tab", "enter")
	if out := h.m.View(); !strings.Contains(out, "`volctl --state-dir /s reconcile`") {
		t.Errorf("reconcile's problems do not carry the state dir:\n%s", out)
	}
}
