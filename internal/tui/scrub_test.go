package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// scrubbingEngine is the fixture's engine with a redactor that knows one secret value, as
// *engine.Engine knows the state's; fail makes the redactor unable to read them.
type scrubbingEngine struct {
	*fakeEngine
	secret string
	fail   error
}

func (e scrubbingEngine) RedactValue(_ context.Context, v any, _ ...string) error {
	if e.fail != nil {
		return e.fail
	}
	if s, ok := v.(*string); ok {
		*s = strings.ReplaceAll(*s, e.secret, "[REDACTED]")
	}
	return nil
}

// A plugin whose node ID echoes a volume's secret: a force-detach's warning naming the node
// it is still attached to, or an error quoting it, is shown scrubbed, in the status line and
// in the box; when the secrets cannot be read, the text is withheld.
func TestActionResultsAreScrubbedOfSecrets(t *testing.T) {
	const secret = "tui-nodeid-s3cret-77a2"
	warning := `volume "mysql-1" stays attached to node "node-` + secret + `": ControllerUnpublishVolume is owed (volctl reconcile sends it)`
	for _, tt := range []struct {
		name     string
		set      func(*fakeEngine)
		fail     error
		want     string
		withheld bool
	}{
		{"warning", func(f *fakeEngine) { f.detachWarnings = []string{warning} }, nil, "[REDACTED]", false},
		{"error", func(f *fakeEngine) { f.detachErr = errors.New(warning) }, nil, "[REDACTED]", false},
		{"warning, secrets unreadable", func(f *fakeEngine) { f.detachWarnings = []string{warning} }, errors.New("database is locked"), "withheld", true},
		{"error, secrets unreadable", func(f *fakeEngine) { f.detachErr = errors.New(warning) }, errors.New("database is locked"), "withheld", true},
	} {
		fake := fixture()
		tt.set(fake)
		eng := scrubbingEngine{fakeEngine: fake, secret: secret}
		h := newHarness(t, eng, Options{})
		eng.fail = tt.fail
		h.m.eng = eng // the redactor fails from now on: the reads before it did not
		h.keys("down", "F", "tab", "enter")
		shown := h.m.status.text
		if h.m.failure != nil {
			shown += "\n" + h.m.failure.err
		}
		if strings.Contains(shown, secret) {
			t.Errorf("%s: the dashboard shows the secret a plugin echoed into a force-detach's result:\n%s", tt.name, shown)
		}
		if !strings.Contains(shown, tt.want) {
			t.Errorf("%s: the result shown lacks %q:\n%s", tt.name, tt.want, shown)
		}
		if tt.withheld && !strings.Contains(shown, "database is locked") {
			t.Errorf("%s: withheld without saying why:\n%s", tt.name, shown)
		}
	}
}
