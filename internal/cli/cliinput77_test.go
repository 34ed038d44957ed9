package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
)

// A command given --state-dir whose arguments are refused with a corrected command line
// (lastAsFlag: `volume release db a1` is "volctl volume release db --alloc a1"; a list alias
// given an ID: "to show one: volctl volume status db") prints that command without the
// --state-dir: the refusal is made by cobra's argument check, before the root's
// PersistentPreRunE wraps stderr in stateDirAdvice, and the command is not in backticks
// either, so nothing would rewrite it. Pasted, `volctl volume release db --alloc a1` releases
// alloc a1's claim of volume "db" in the default state dir (root's /var/lib/volctl), another
// state's volume of the same ID, unmounting it under whatever uses it there. The command a
// refusal offers must carry the --state-dir given, as every other advice does
// (TestAdviceCarriesTheStateDirGiven).
// Found by helper review77 (cliinput).
func TestArgumentRefusalsCommandCarriesTheStateDirGiven(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"volume", "release", "db", "a1"},
		{"volume", "claim", "db", "a1"},
		{"volume", "ls", "db"},
	} {
		ios, _, _, errOut := iostreams.Test()
		f := NewFactory(ios)
		root := NewRootCmd(f)
		root.SetArgs(append([]string{"--state-dir", dir}, args...))
		code := f.Report(root.Execute())
		_ = f.Close()
		if code != ExitUsage {
			t.Fatalf("%v: exit %d, want %d (a usage error)\n%s", args, code, ExitUsage, errOut)
		}
		shown := regexp.MustCompile("`volctl (--state-dir \\S+ )?volume (release|claim|status) db").FindString(errOut.String())
		if shown == "" {
			t.Fatalf("%v: no command offered in its place:\n%s", args, errOut)
		}
		if !strings.Contains(errOut.String(), "--state-dir "+shellquote.Arg(dir)) {
			t.Errorf("volctl --state-dir %s %s offered a command for the default state dir, not the one given:\n%s",
				dir, strings.Join(args, " "), errOut)
		}
	}
}

// stateDirAdvice finds an advised command by "`volctl " with a space after it. A spec's
// diagnostic is word-wrapped to the terminal's width before it is written, and where the wrap
// falls right after "`volctl" the advice reads "`volctl\ngroup stop api`": it is written bare,
// without the --state-dir given, and followed it stops group "api" of the default state dir.
// Whatever the terminal's width, advice on stderr must carry the state dir given (the rewrite
// made before the wrap, or a line break after volctl read as the space it replaced).
// Found by helper review77 (cliinput).
func TestWrappedDiagnosticAdviceCarriesTheStateDirGiven(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "g.hcl")
	spec := `group "api" {
  count = 0
  volume "d" {
    type            = "csi"
    source          = "db"
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
}
`
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	advised, bare, example := 0, []int(nil), ""
	for width := 30; width <= 160; width++ {
		ios, _, _, errOut := iostreams.Test()
		ios.SetTTY(false, false, true)
		ios.SetWidth(width)
		f := NewFactory(ios)
		root := NewRootCmd(f)
		root.SetArgs([]string{"--state-dir", dir, "validate", file})
		code := f.Report(root.Execute())
		_ = f.Close()
		if code != ExitUsage {
			t.Fatalf("validate of a count of 0 at width %d: exit %d, want %d\n%s", width, code, ExitUsage, errOut)
		}
		text := errOut.String()
		at := strings.Index(text, "`volctl")
		if at < 0 {
			t.Fatalf("width %d: no advice in the diagnostic:\n%s", width, text)
		}
		advised++
		if rest := text[at+len("`volctl"):]; !strings.HasPrefix(strings.TrimLeft(rest, " \n"), "--state-dir") {
			bare = append(bare, width)
			if example == "" {
				example = text
			}
		}
	}
	if advised == 0 {
		t.Fatal("no width advised anything")
	}
	if len(bare) > 0 {
		t.Errorf("at terminals %v columns wide the advice was written without the state dir given (%s), as:\n%s", bare, dir, example)
	}
}

// intVar reads a number as strconv.ParseInt with base 0 does, so a leading zero makes it
// octal: `events -n 010` shows the newest 8 events, and `plugin serve hostpath --max-volumes
// 010` reports and enforces a limit of 8 volumes, with nothing said; `-n 09` is refused as
// "not a whole number", which it is. A count typed with a leading zero (padded by a script,
// `printf %03d`) means that decimal number, or is refused saying why; it is never silently
// another number.
// Found by helper review77 (cliinput).
func TestIntFlagWithALeadingZeroIsNotReadAsOctal(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int
	}{{"010", 10}, {"09", 9}} {
		ios, _, _, _ := iostreams.Test()
		got := -1
		cmd := newCmdEvents(NewFactory(ios), func(o *EventsOptions) error { got = o.Limit; return nil })
		cmd.SetArgs([]string{"-n", tt.value})
		cmd.SetOut(ios.Out)
		cmd.SetErr(ios.ErrOut)
		err := cmd.Execute()
		if err != nil || got != tt.want {
			t.Errorf("events -n %s: read as %d, %v; want %d, the decimal number written", tt.value, got, err, tt.want)
		}
	}
}

// TestArgumentRefusalsCommandCarriesARefusedStateDirAsGiven: a refusal before any command ran
// (its arguments) with a --state-dir volctl refuses (`~/state`, which no shell expanded): the
// offered command was written bare, since the state dir could not be resolved, and nothing else
// said the state dir was refused; pasted, it released alloc a1's claim of the default state
// dir's volume "db". It carries the state dir as given, so that pasted it meets the same
// refusal. Found by helper review77 (own2).
func TestArgumentRefusalsCommandCarriesARefusedStateDirAsGiven(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	f := NewFactory(ios)
	root := NewRootCmd(f)
	root.SetArgs([]string{"--state-dir=~/state", "volume", "release", "db", "a1"})
	code := f.Report(root.Execute())
	_ = f.Close()
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d (a usage error)\n%s", code, ExitUsage, errOut)
	}
	if want := "`volctl --state-dir '~/state' volume release db --alloc a1`"; !strings.Contains(errOut.String(), want) {
		t.Errorf("the refusal offers a command without the state dir given; want %s:\n%s", want, errOut)
	}
}
