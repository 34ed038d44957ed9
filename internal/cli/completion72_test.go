package cli

import (
	"github.com/spf13/cobra"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestListAliasesCompleteNoArgument: `volume ls`, `volume list`, `plugin ls` and `plugin list`
// take no argument (withListAliases refuses one, exit 2), yet a <Tab> after them offered the
// IDs `status` takes under its own name: completions are registered by the command's path, the
// same whatever name it is called by, and the shell completed a line the command refused.
// Found by helper review72; the own review of the fix found it read cobra's __complete request
// alone, not the __completeNoDesc of scripts written with --no-descriptions.
func TestListAliasesCompleteNoArgument(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.MultiNodeMultiWriter)
	// The refusal these candidates lead to.
	if code, _, errOut := h.runReported("volume", "ls", "db"); code != ExitUsage {
		t.Fatalf("volume ls db: exit %d (%s), want %d", code, errOut, ExitUsage)
	}
	for _, args := range [][]string{
		{"volume", "ls", ""},
		{"volume", "list", ""},
		{"plugin", "ls", ""},
		{"plugin", "list", ""},
	} {
		// As the scripts ask, with descriptions and without (--no-descriptions: cobra's
		// __completeNoDesc, which the first fix did not read).
		for _, request := range []string{cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd} {
			ids, directive := completeBy(t, request, h.state, args...)
			if len(ids) != 0 || directive != noFiles {
				t.Errorf("%s %q = %q %s, want nothing (the command takes no argument under that name) and %s", request, args, ids, directive, noFiles)
			}
		}
	}
}

// TestVolumeArgumentsOfNomadAndExportComplete: nomad register, release and status and export
// nomad, which take VOLUME..., completed nothing, where every other command taking a volume ID
// completes the state dir's (the design's paragraph on shell completion); an ID given already is
// not offered again. Found by helper review72.
func TestVolumeArgumentsOfNomadAndExportComplete(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.MultiNodeMultiWriter)
	for _, args := range [][]string{
		{"nomad", "register", ""},
		{"nomad", "release", ""},
		{"nomad", "status", ""},
		{"export", "nomad", ""},
	} {
		ids, directive := complete(t, h.state, args...)
		if strings.Join(ids, " ") != "db" || directive != noFiles {
			t.Errorf("complete %q = %q %s, want [\"db\"] %s", args, ids, directive, noFiles)
		}
		args = append(args[:len(args)-1], "db", "")
		if ids, directive := complete(t, h.state, args...); len(ids) != 0 || directive != noFiles {
			t.Errorf("complete %q = %q %s, want nothing (db given already) and %s", args, ids, directive, noFiles)
		}
	}
}
