package cli

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestStdinAtATerminalSaysItIsRead: a spec named "-" with standard input a terminal is read
// from what the user types; before, volctl waited on an empty line without a word, which reads
// as a hang to whoever meant a file. The note goes to stderr, only when both stdin and stderr
// are terminals (a pipe, or a script capturing stderr, gets nothing new), and nothing of it
// reaches stdout, the data. Both ways in are checked: validate's one file at a time
// (readSpecSource) and the commands that read every file first (readSpecSources).
func TestStdinAtATerminalSaysItIsRead(t *testing.T) {
	for _, c := range []struct {
		name             string
		stdinTTY, errTTY bool
		wantNote         bool
	}{
		{"stdin and stderr terminals", true, true, true},
		{"stdin a pipe", false, true, false},
		{"stderr captured", true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ios, in, out, errOut := iostreams.Test()
			ios.SetTTY(c.stdinTTY, false, c.errTTY)
			in.WriteString(validVolume)
			if err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{"-"}, ReadFile: os.ReadFile}); err != nil {
				t.Fatalf("validate - = %v; stderr: %s", err, errOut)
			}
			if got := strings.Contains(errOut.String(), stdinAtTerminal); got != c.wantNote {
				t.Errorf("validate -: stderr says how to end the spec = %v, want %v; stderr: %q", got, c.wantNote, errOut)
			}
			if strings.Contains(out.String(), "Ctrl-D") {
				t.Errorf("validate -: the note reached stdout: %q", out)
			}

			ios, in, _, errOut = iostreams.Test()
			ios.SetTTY(c.stdinTTY, false, c.errTTY)
			in.WriteString(validVolume)
			srcs, err := readSpecSources(context.Background(), ios, nil, []string{"-"})
			if err != nil || len(srcs) != 1 || string(srcs[0].Src) != validVolume {
				t.Fatalf("readSpecSources(-) = %d sources, %v; want the spec typed", len(srcs), err)
			}
			if got := strings.Contains(errOut.String(), stdinAtTerminal); got != c.wantNote {
				t.Errorf("readSpecSources(-): stderr says how to end the spec = %v, want %v; stderr: %q", got, c.wantNote, errOut)
			}
		})
	}
}
