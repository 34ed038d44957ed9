package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
)

// A plugin's snapshot IDs are its own strings, kept as given: the commands a delete it answers
// OK while still listing the snapshot tells the user to run (delete it again, or deregister it)
// name it so that pasted into a shell they act on that snapshot, not on a glob, on two words,
// on a command substitution's output, or on a flag (shellquote).
func TestSuggestedSnapshotCommandsNameAHostileIDExactly(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"db?x ", "a b ", "$(x) ", "it's ", `say "hi" `, "-rf ", "x;y "} {
		t.Run(prefix, func(t *testing.T) {
			h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.DeleteLater = true; c.SnapshotIDPrefix = prefix })
			s := h.snapshot("keep")
			if !strings.HasPrefix(s.ID, prefix) {
				t.Fatalf("snapshot ID %q; want the plugin's, starting %q", s.ID, prefix)
			}
			err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil)
			if err == nil {
				t.Fatal("delete of a snapshot the plugin still lists answered OK")
			}
			cmds := shellquotetest.Commands(err.Error())
			var n int
			for _, cmd := range cmds {
				if !strings.HasPrefix(cmd, "volctl volume snapshot ") {
					continue
				}
				n++
				args := shellquotetest.RunArgs(t, cmd)
				if len(args) < 2 || !slices.Equal(args[len(args)-2:], []string{"mem", s.ID}) || slices.Contains(args[:len(args)-2], s.ID) {
					t.Errorf("`%s` run by sh gives volctl %q; want its arguments to end with plugin mem and snapshot %q", cmd, args, s.ID)
				}
				if strings.HasPrefix(s.ID, "-") && !slices.Contains(args, "--") {
					t.Errorf("`%s` gives volctl %q: %q would read as a flag without -- before it", cmd, args, s.ID)
				}
			}
			if n != 2 {
				t.Errorf("%d snapshot commands in %q; want 2 (delete again, deregister)", n, err)
			}
		})
	}
}
