package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// README and docs/architecture.md say a command stopped by SIGINT, SIGTERM or SIGHUP exits 1
// "saying which signal (`SIGTERM received`, not Go's "context canceled") and where it stopped".
// Before, `volctl plugin status --json` (and `volctl status --json`, which probes the same way)
// stopped while a plugin held its Probe printed, before its error, the engine's warning
// `level=WARN msg="recording plugin health" ... err="...: context canceled"`, and its error
// named the state database ("state .../volctl.db: interrupted before the transaction began") as
// where it stopped, not the plugin it was probing.
func TestPluginStatusStoppedBySignalSaysTheSignal(t *testing.T) {
	_, _, volctl := serveHolding(t, csitest.NewMemPlugin(csitest.DefaultMemConfig()))
	for _, args := range [][]string{{"plugin", "status", "--json"}, {"plugin", "status", "mem", "--json"}, {"status", "--json"}} {
		cmd := "volctl " + strings.Join(args, " ")
		code, out, errOut := volctl("Probe", "SIGTERM", args...)
		if code != ExitError || out != "" {
			t.Errorf("%s stopped by SIGTERM in Probe: exit %d, stdout %q; want exit 1, nothing on stdout", cmd, code, out)
		}
		if strings.Contains(errOut, "context canceled") {
			t.Errorf("%s stopped by SIGTERM in Probe: stderr says Go's \"context canceled\", not the signal:\n%s", cmd, errOut)
		}
		if !strings.Contains(errOut, "SIGTERM received") || !strings.Contains(errOut, `"mem"`) {
			t.Errorf("%s stopped by SIGTERM in Probe: stderr does not say the signal and the plugin it was probing (where it stopped):\n%s", cmd, errOut)
		}
	}
}
