package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestForcedDeregisterOfAPluginNotRegisteredDoesNotAsk: `plugin deregister ID --force` on a
// terminal asked "Deregister plugin ... even if volumes use it? [y/N]" of a plugin ID the state
// dir does not register (a typo of a registered one), and only after a "y" said it is not
// registered. The other destructive commands look first (confirmedOnVolume, confirmedOnPlugin:
// TestDestructiveCommandsOnAVolumeNotRecordedDoNotAsk). Found by helper review71.
func TestForcedDeregisterOfAPluginNotRegisteredDoesNotAsk(t *testing.T) {
	h := newCLIHarness(t)
	ios, in, _, errOut := iostreams.Test()
	ios.SetTTY(true, true, true)
	in.WriteString("n\n")
	f := NewFactory(ios)
	f.stateDirFlag = h.state
	defer f.Close()
	err := runCmd(t, newCmdPluginDeregister(f, nil), "Mem", "--force")
	asked := strings.Contains(errOut.String(), "[y/N]")
	if asked || ExitCode(err) != ExitError || err == nil || !strings.Contains(err.Error(), `plugin "Mem"`) || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("plugin deregister --force of a plugin not registered: asked %v (stderr %q), exit %d, err %v; want no question, exit 1, not registered", asked, errOut, ExitCode(err), err)
	}
}
