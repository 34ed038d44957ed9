package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestFlagsHelpCallsRequiredAreChecked: a flag whose help says "(required)" is marked so
// (requiredFlag), and so checked before the command runs and where the docs test parses a
// quoted command line (parseAdvised). plugin serve hostpath's --root and --node-id said
// "(required)" and were checked only inside the run: a doc or an advice quoting
// `volctl plugin serve hostpath --socket PATH` passed TestDocsAdviseCommandsVolctlTakes, and
// fails with exit 2 as a user runs it.
func TestFlagsHelpCallsRequiredAreChecked(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	seen := 0
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if !strings.Contains(fl.Usage, "(required)") {
				return
			}
			seen++
			if _, ok := fl.Annotations[requiredAnnotation]; !ok {
				t.Errorf("%s --%s: its help says (required), but it is not marked with requiredFlag", c.CommandPath(), fl.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(NewFactory(ios)))
	if seen < 3 {
		t.Fatalf("%d flags say (required): the walk missed volume claim, release and expand's", seen)
	}
	for _, line := range []string{
		"volctl plugin serve hostpath --socket /run/hp.sock --node-id n1",
		"volctl plugin serve hostpath --socket /run/hp.sock --root /srv/hp",
	} {
		if err := parseAdvised(t, line); err == nil {
			t.Errorf("`%s` parses as a command volctl takes; it lacks a required flag", line)
		}
	}
	if err := parseAdvised(t, "volctl plugin serve hostpath --socket /run/hp.sock --root /srv/hp --node-id n1"); err != nil {
		t.Errorf("plugin serve with every flag refused: %v", err)
	}
}
