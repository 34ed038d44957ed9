package cli

import (
	"context"
	"testing"
	"unicode/utf8"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// versionWithEscapes is what a hostile plugin puts in its version: an escape sequence that clears
// the screen, C1's CSI (U+009B, a terminal's ESC [), a carriage return that lets the rest
// overwrite the line, an OSC 52 that writes the clipboard, a bidi override, a zero width
// space. It holds a tab and a newline too, which a terminal only
// lays out.
const versionWithEscapes = "v1\x1b[2J\u009b31m\r\x1b]52;c;cm0gLXJmIH4=\x07\u202e\u200b\tend\nnext"

// runTTY runs volctl with args against state, stdout a terminal or not, and returns the exit
// status and stdout.
func runTTY(t *testing.T, state string, terminal bool, args ...string) (int, string, string) {
	t.Helper()
	ios, _, o, eo := iostreams.Test()
	ios.SetTTY(false, terminal, false)
	f := NewFactory(ios)
	root := NewRootCmd(f)
	root.SetArgs(append([]string{"--state-dir", state}, args...))
	code := f.Report(f.RedactError(context.Background(), root.Execute()))
	f.Close()
	return code, o.String(), eo.String()
}

// actsOnTerminal reports the first thing in s a terminal would act on rather than show: a
// control character but newline and tab, a bidi control, a character that shows as nothing,
// a byte that is not UTF-8.
func actsOnTerminal(s string) (string, bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f ||
			spec.IsBidiControl(r) || spec.IsInvisible(r) || r == 0x2028 || r == 0x2029 {
			return s[i:min(len(s), i+8)], true
		}
		i += n
	}
	return "", false
}

// TestTemplateAndJQOutputEscapedOnTerminal plays a plugin whose version holds escape
// sequences, a bidi override and an invisible character. What -t
// and --jq print to a terminal shows each as an escape, as a table does (the terminal would
// clear the screen, write the clipboard, reorder the line); --json shows the bidi control and
// the invisible character as \u escapes too. Piped (stdout not a terminal), -t and --jq's
// strings are the data exactly, for the script reading them.
func TestTemplateAndJQOutputEscapedOnTerminal(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Version = versionWithEscapes
	_, e, _ := serveMem(t, csitest.NewMemPlugin(cfg))
	state := e.StateDir()
	e.Close()
	for _, args := range [][]string{
		{"plugin", "status", "mem", "-t", "{{.version}}"},
		{"plugin", "status", "mem", "-t", "{{printf \"%s\" .version}}|{{json .version}}"},
		{"plugin", "status", "--jq", ".[0].version"},
		{"plugin", "status", "mem", "--json"},
		{"plugin", "status", "mem", "--jq", "."},
	} {
		code, out, errOut := runTTY(t, state, true, args...)
		if code != 0 {
			t.Fatalf("%q on a terminal: exit %d: %s", args, code, errOut)
		}
		if what, ok := actsOnTerminal(out); ok {
			t.Errorf("%q prints to a terminal what it acts on, raw: %+q in\n%+q", args, what, out)
		}
		if args[len(args)-2] == "-t" && args[len(args)-1] == "{{.version}}" && out != `v1\x1b[2J\u009b31m\r\x1b]52;c;cm0gLXJmIH4=\a\u202e\u200b`+"\tend\nnext" {
			t.Errorf("%q on a terminal prints %+q, not the version with each character it would act on escaped, tab and newline kept", args, out)
		}
	}
	for _, args := range [][]string{
		{"plugin", "status", "mem", "-t", "{{.version}}"},
		{"plugin", "status", "--jq", ".[0].version"},
	} {
		code, out, errOut := runTTY(t, state, false, args...)
		if code != 0 {
			t.Fatalf("%q piped: exit %d: %s", args, code, errOut)
		}
		want := versionWithEscapes
		if args[len(args)-2] == "--jq" {
			want += "\n"
		}
		if out != want {
			t.Errorf("%q piped prints %+q, not the data exactly (%+q)", args, out, want)
		}
	}
}
