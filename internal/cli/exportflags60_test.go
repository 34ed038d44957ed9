package cli

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The plugin job export nomad writes for a plugin with an exec block reads the block's
// arguments as `volctl plugin serve hostpath` parses them: serve's own flag parsing is the
// reference here. A flag given twice is what its last value says, and nothing after "--" is a
// flag. Before, the first --max-volumes or --root decided: an exec block the agent serves with
// "--max-volumes 2 --max-volumes 5" (a limit of 5) was exported with a limit of 2, and one
// with a later --root ran Nomad's plugin over the first directory.
func TestExportNomadPluginJobReadsTheExecBlocksFlagsAsServeDoes(t *testing.T) {
	for _, args := range []string{
		"--root /r --node-id n1 --max-volumes 2",
		"--root /r --node-id n1 --max-volumes 2 --max-volumes 5",
		"--root /r --node-id n1 --max-volumes=2 --max-volumes 5",
		"--root /r --node-id n1 --max-volumes 5 --max-volumes=0",
		"--root /a --node-id n1 --root /b",
		"--root=/a --node-id n1 --root /b --enable-attach",
		"--root /a --root=/b --node-id n1 --enable-attach=false",
		"--root /r --node-id n1 --enable-attach --max-volumes 3",
	} {
		fields := strings.Fields(args)
		o, err := parseOptions(t, newCmdPluginServeHostpath, fields...)
		if err != nil {
			t.Fatalf("serve refuses %q: %v", args, err)
		}
		served := servedAs(fields, true, nil)
		if got := slices.Contains(served, "--enable-attach"); got != o.EnableAttach {
			t.Errorf("exec args %q: the plugin job attaches %v, serve %v", args, got, o.EnableAttach)
		}
		want := []string(nil)
		if o.EnableAttach {
			want = append(want, "--enable-attach")
		}
		if strings.Contains(args, "--max-volumes") {
			want = append(want, "--max-volumes", strconv.FormatInt(o.MaxVolumes, 10))
		}
		if !slices.Equal(served, want) {
			t.Errorf("exec args %q: the plugin job is served with %q, serve with %q", args, served, want)
		}
		if got := flagValue(fields, "--root"); got != o.Root {
			t.Errorf("exec args %q: the plugin job's root is %q, serve's %q", args, got, o.Root)
		}
	}
	// After "--" serve reads no flag (and refuses the arguments): none is carried over.
	for _, args := range []string{"--root /r -- --enable-attach", "--root /r -- --max-volumes 9"} {
		fields := strings.Fields(args)
		if served := servedAs(fields, true, nil); len(served) != 0 {
			t.Errorf("exec args %q: the plugin job is served with %q, read after \"--\"", args, served)
		}
	}
}
