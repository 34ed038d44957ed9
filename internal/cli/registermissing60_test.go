package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// A plugin registered with an exec block whose command is a path that is not there, or not
// executable (even root's execve needs an x bit), is one the agent cannot start: register says so at once, naming the path and
// the error. A command named alone is looked up in the agent's PATH, which is not this
// process's, and a relative path in its working directory (a warning of its own says so):
// neither is warned of so. Before, such
// a plugin was registered in silence, and the agent failed to start it at each try.
func TestPluginRegisterWarnsOfACommandThatIsNotThere(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plugin.txt")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-plugin")
	for _, tc := range []struct {
		command string
		want    []string
	}{
		{missing, []string{`Warning: plugin "p": the agent cannot start it until its command is there: `, missing, "no such file or directory"}},
		{notExec, []string{`Warning: plugin "p": the agent cannot start it until its command is there: `, notExec, "permission denied"}},
		{"no-such-plugin-on-any-path", nil},
		{"bin/no-such-plugin", nil},
	} {
		t.Run(filepath.Base(tc.command), func(t *testing.T) {
			src := "plugin \"p\" {\n  type   = \"monolith\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"" + tc.command + "\"\n  }\n}\n"
			ios, _, _, errOut := iostreams.Test()
			o := &PluginRegisterOptions{IO: ios, Files: []string{"p.hcl"},
				ReadFile: func(string) ([]byte, error) { return []byte(src), nil },
				Engine:   func(context.Context) (*engine.Engine, error) { return nil, errors.New("no engine in this test") }}
			_ = pluginRegisterRun(context.Background(), o) // the warning comes before the engine opens
			if tc.want == nil {
				checkHolds(t, "stderr", errOut.String(), nil, []string{"cannot start it"})
				return
			}
			checkHolds(t, "stderr", errOut.String(), tc.want, nil)
		})
	}
}
