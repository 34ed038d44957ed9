package engine

import (
	"strings"
	"testing"
)

// A plugin the agent cannot start, or whose process exited, is started again after a backoff
// the agent's config bounds (restart_backoff_max): the words say so rather than a minute,
// the default, which a config of 10m made false. Found by helper review61.
func TestSupervisionWordsNameTheConfiguredBackoff(t *testing.T) {
	for _, mode := range []string{SupervisionStartFailed, SupervisionExited} {
		w := (&Supervision{Mode: mode, Pid: 7, Note: "exit status 2"}).Words()
		if !strings.Contains(w, "restart_backoff_max") || strings.Contains(w, "up to a minute)") {
			t.Errorf("%s: %q; want the backoff bounded by restart_backoff_max", mode, w)
		}
	}
}
