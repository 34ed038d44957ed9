package engine

import (
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
)

// TestTakenAgainAdviceQuotesThePlugin: the advice after a snapshot delete that a create raced
// named `volctl volume snapshot list --plugin %s` with the plugin's ID as it is: for a plugin
// "my hp" (IDs take spaces) the shell gave --plugin "my" and an argument "hp", which snapshot
// list refuses. Run by sh, the advised commands give the words they name.
func TestTakenAgainAdviceQuotesThePlugin(t *testing.T) {
	t.Parallel()
	fp := &csi.Fingerprint{Controller: true}
	fp.Capabilities.Controller.ListSnapshots = true
	const plugin, snap = "my hp's $x", "s 1"
	commands := shellquotetest.Commands(takenAgainAdvice(&conn{fp: fp}, plugin, snap))
	if len(commands) != 2 {
		t.Fatalf("advice names %d commands, want the list and the deregister: %q", len(commands), commands)
	}
	for i, want := range [][]string{{"volume", "snapshot", "list", "--plugin", plugin}, {"volume", "snapshot", "delete", plugin, snap}} {
		if got := shellquotetest.RunArgs(t, commands[i]); !slices.Equal(got, want) {
			t.Errorf("`%s` run by sh gives %q, want %q", commands[i], got, want)
		}
	}
}
