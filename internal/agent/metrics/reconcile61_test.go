package metrics

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// unreadableMounts is a mount table that cannot be read (/proc/self/mountinfo refused, a
// mount namespace gone): every reconcile pass fails before it looks at a claim.
type unreadableMounts struct{}

func (unreadableMounts) MountsUnder(string) (map[string]bool, error) {
	return nil, errors.New("open /proc/self/mountinfo: permission denied")
}

func (unreadableMounts) Mounted(string, string) (engine.MountPoint, error) {
	return engine.MountPoint{}, errors.New("open /proc/self/mountinfo: permission denied")
}

// volctl_reconcile_problems is "problems the last pass left", and the doc's
// VolctlReconcileFailing alert (volctl_reconcile_problems > 0 for 15m) is how an operator
// learns that reconcile keeps leaving things wrong. A pass that fails outright (its error, no
// report: it could not read the mount table, the state dir turned read-only) leaves the gauge
// as it was, and the time of the last pass too, which grows stale while reconcile cannot work.
// Before, the gauge went to 0 the moment reconcile stopped working at all, and the alert
// resolved (or never fired) while the failed claims stayed failed. Found by helper review61.
func TestAFailedPassKeepsTheProblemsLeft(t *testing.T) {
	ctx := context.Background()
	e, err := engine.Open(ctx, engine.Config{StateDir: t.TempDir(), Mounts: unreadableMounts{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	m := New()
	m.CollectState(e)

	// A pass that left two failed claims, as the agent reports it.
	m.Reconciled("timer", engine.ReconcileReport{
		Problems: []engine.ReconcileAction{{Kind: "failed", VolumeID: "db"}, {Kind: "failed", VolumeID: "logs"}},
	}, errors.New("2 problems"))
	fams := gather(t, m)
	if v, _ := value(fams, "volctl_reconcile_problems", nil); v != 2 {
		t.Fatalf("volctl_reconcile_problems = %v after a pass that left 2, want 2", v)
	}
	ended, _ := value(fams, "volctl_reconcile_last_pass_timestamp_seconds", nil)
	time.Sleep(10 * time.Millisecond) // a later pass ends at a later time, to the gauge's resolution

	// The next pass, run as agent.reconcile runs it, cannot read the mount table.
	rep, perr := e.Reconcile(ctx)
	if perr == nil {
		t.Fatal("the pass on an unreadable mount table succeeded; the test's premise is gone")
	}
	m.Reconciled("timer", rep, perr)
	fams = gather(t, m)
	if n, _ := value(fams, "volctl_reconcile_passes_total", map[string]string{"trigger": "timer", "result": "error"}); n != 1 {
		t.Errorf(`volctl_reconcile_passes_total{result="error"} = %v, want 1`, n)
	}
	if v, _ := value(fams, "volctl_reconcile_problems", nil); v == 0 {
		t.Errorf("volctl_reconcile_problems = 0 after a pass that failed (%v) and fixed nothing: "+
			"the 2 problems left before read as none, and VolctlReconcileFailing (volctl_reconcile_problems > 0) resolves", perr)
	}
	if at, _ := value(fams, "volctl_reconcile_last_pass_timestamp_seconds", nil); at != ended {
		t.Errorf("volctl_reconcile_last_pass_timestamp_seconds moved from %v to %v for a pass that failed before it looked", ended, at)
	}
}

// docs/metrics.md lists the outcome label's values, for dashboards and alerts to be written
// against, and docs/json.md the kinds of `reconcile --json`'s actions: every kind the engine's
// passes report (rep.did("KIND", ...) in its code, read as the doc tests read the code for
// variables) is in both. Before, "expanded" and "snapshotted" were served and printed, and
// neither doc named them. Found by helper review61.
func TestReconcileOutcomesAreDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := tableRowWords(t, raw, "| `volctl_reconcile_outcomes_total`")
	jsonRaw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	inJSON := tableRowWords(t, jsonRaw, "| `actions` |")

	// The kinds the engine's reconcile pass reports: rep.did("KIND", ...) in its code.
	did := regexp.MustCompile(`rep\.did\("([a-z_-]+)"`)
	files, err := filepath.Glob(filepath.Join("..", "..", "engine", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range did.FindAllStringSubmatch(string(b), -1) {
			kinds[m[1]] = filepath.Base(f)
		}
	}
	if len(kinds) < 4 {
		t.Fatalf("found %v in the engine's code: its format changed", kinds)
	}

	// Each, reported by a pass, is served as an outcome series.
	m := New()
	var rep engine.ReconcileReport
	for k := range kinds {
		rep.Actions = append(rep.Actions, engine.ReconcileAction{Kind: k})
	}
	m.Reconciled("timer", rep, nil)
	fams := gather(t, m)
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		if _, served := value(fams, "volctl_reconcile_outcomes_total", map[string]string{"outcome": k}); served && !documented[k] {
			t.Errorf(`volctl_reconcile_outcomes_total{outcome=%q} is served (the engine's %s reports it), but docs/metrics.md's outcomes are %v`,
				k, kinds[k], slices.Sorted(maps.Keys(documented)))
		}
		if !inJSON[k] {
			t.Errorf("reconcile --json prints actions of kind %q (the engine's %s reports it), but docs/json.md's are %v", k, kinds[k], slices.Sorted(maps.Keys(inJSON)))
		}
	}
}

// tableRowWords are the words in backquotes of the last cell of the table row of doc starting
// with prefix.
func tableRowWords(t *testing.T, doc []byte, prefix string) map[string]bool {
	t.Helper()
	words := map[string]bool{}
	for line := range strings.Lines(string(doc)) {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		cols := strings.Split(line, "|")
		for i, w := range strings.Split(cols[len(cols)-2], "`") {
			if i%2 == 1 && w != "" && !strings.ContainsAny(w, " ,()") {
				words[w] = true
			}
		}
	}
	if len(words) < 5 {
		t.Fatalf("read %v from the row %q: its format changed", words, prefix)
	}
	return words
}

// Every trigger and result of volctl_reconcile_passes_total is a series from the start, at 0,
// as the outcomes are: an alert on the rate of failed passes (increase of result "error")
// reads a series that exists before the first failure. Before, none existed until a pass of
// that trigger and result was counted (round 61's left item). The triggers are the agent's
// own words for its passes: the test reads them from its code.
func TestReconcilePassesArePresentBeforeTheFirstPass(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "agent.go"))
	if err != nil {
		t.Fatal(err)
	}
	triggers := map[string]bool{"start": true}
	for _, m := range regexp.MustCompile(`a\.reconcile\(ctx, "([a-z_]+)"\)`).FindAllStringSubmatch(string(src), -1) {
		triggers[m[1]] = true
	}
	if len(triggers) < 4 {
		t.Fatalf("read %d triggers from agent.go (%v): the pattern no longer finds the agent's passes", len(triggers), slices.Sorted(maps.Keys(triggers)))
	}
	fams := gather(t, New())
	for trigger := range triggers {
		for _, result := range []string{"ok", "problems", "error"} {
			if v, ok := value(fams, "volctl_reconcile_passes_total", map[string]string{"trigger": trigger, "result": result}); !ok || v != 0 {
				t.Errorf(`volctl_reconcile_passes_total{trigger=%q,result=%q} = %v (present: %v) before any pass; want a series at 0`, trigger, result, v, ok)
			}
		}
	}
}
