package cli

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A command that takes as a flag what users write as one more argument (lastAsFlag: volume
// claim and release's --alloc, snapshot list's --plugin, events' --volume) answers that extra
// argument with the command line rewritten to use the flag. It rewrites an argument the flag
// itself refuses, though: an empty one (`volctl volume claim db "$ALLOC"` with ALLOC unset) is
// advised as `volctl volume claim db --alloc ”`, which volctl refuses ("--alloc is empty"), and
// an empty volume (`volume claim "" web-0`) as `volctl volume claim ” --alloc web-0`,
// refused as "argument 1 is empty"; one beginning with "-" given after `--` is advised as
// `--plugin=-p`, which the ID flag refuses ("no ID does"). The user follows the advice and is
// refused again, for what the first refusal could have said. The refusal must name the
// empty argument as argsChecker does (or advise only a command volctl takes).
// Found by helper review83 (cliinput).
func TestArgumentAdvisedAsAFlagIsOneTheFlagTakes(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"volume", "claim", "db", ""},
		{"volume", "claim", "", "web-0"},
		{"volume", "release", "db", ""},
		{"volume", "snapshot", "list", ""},
		{"volume", "snapshot", "list", "--", "-p"},
		{"events", ""},
		{"events", "--", "-x"},
	} {
		_, err := execRoot(t, append([]string{"--state-dir", dir}, args...)...)
		if err == nil || ExitCode(err) != ExitUsage {
			t.Fatalf("volctl %q: err = %v (exit %d), want a usage error (exit %d)", args, err, ExitCode(err), ExitUsage)
		}
		advised := lastAdvised(err.Error(), "volctl ")
		if advised == "" {
			continue // refused without a command to run instead: nothing to follow
		}
		if perr := parseAdvised(t, advised); perr != nil {
			t.Errorf("volctl %q is refused with the advice `%s`, which volctl refuses in turn: %v\nthe first refusal:\n%v", args, advised, perr, err)
		}
	}
}

// export nomad's --group-file reads a group spec, "-" being standard input, as group run and
// volume create read theirs, but without their check of the files given (checkSpecArgs): given
// "-" twice (`--group-file - --group-file -`), standard input is read for the first and read
// again, empty, for the second, and the refusal says "Standard input is empty: the command
// writing to the pipe may have failed, or written nothing" of a pipe that wrote the whole spec.
// The user is sent to debug the command feeding volctl, which did nothing wrong. As volume
// create and validate do, "-" given twice must be refused for what it is, before anything is
// read ("standard input (-) can be given only once").
// Found by helper review83 (cliinput).
func TestGroupFileStdinGivenTwiceIsNotCalledEmpty(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	e := openEngine(t, state)
	ios, in, stdout, stderr := iostreams.Test()
	in.WriteString("group \"api\" {\n  volume \"d\" {\n    type            = \"csi\"\n    source          = \"db\"\n" +
		"    access_mode     = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n")
	out := filepath.Join(t.TempDir(), "out")
	code := runWith(t.Context(), e, ios, "export", "nomad", "--group-file", "-", "--group-file", "-", "--out", out, "--no-plugin-job")
	text := stderr.String()
	if code != ExitUsage {
		t.Fatalf("export nomad --group-file - --group-file -: exit %d, want %d\n%s%s", code, ExitUsage, stdout, text)
	}
	if strings.Contains(text, "Standard input is empty") || strings.Contains(text, spec.StdinName+":1:1") {
		t.Errorf("export nomad --group-file - --group-file -, a spec on standard input, says standard input is empty "+
			"(it was read for the first --group-file): want \"-\" given twice refused as such\n%s", text)
	}
	if !regexp.MustCompile(`(?i)only once|twice`).MatchString(text) {
		t.Errorf("export nomad --group-file - --group-file -: the refusal does not say \"-\" was given more than once\n%s", text)
	}
}

// A command name after `--` is an argument, not a command, and the command that only groups
// others refuses it (rejectUnknownSubcommands) as an unknown command, with suggestions: `volctl
// -- volume list` (a wrapper's `exec volctl -- "$@"`) says `unknown command "volume" for
// "volctl"` and "Did you mean this? volume", and `volctl volume -- status db` says status is
// unknown and suggests status. volctl has both: the error names as unknown a command it has, and
// its advice is what was typed, which, retyped, is refused the same way. The refusal must not
// call a command volctl has unknown nor suggest the word refused; it should say the `--` made it
// an argument (drop the --).
// Found by helper review83 (cliinput).
func TestCommandNameAfterDoubleDashIsNotCalledUnknown(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--", "volume", "list"},
		{"volume", "--", "status", "db"},
		{"volume", "snapshot", "--", "list"},
	} {
		_, err := execRoot(t, append([]string{"--state-dir", dir}, args...)...)
		if err == nil {
			continue // taken: the word after -- named the command
		}
		word := args[slices.Index(args, "--")+1]
		msg := err.Error()
		if strings.Contains(msg, "unknown command \""+word+"\"") {
			t.Errorf("volctl %q: the error calls %q, a command volctl has, unknown:\n%s", args, word, msg)
		}
		if _, hint, ok := strings.Cut(msg, "Did you mean this?"); ok && regexp.MustCompile(`(?m)^\t`+regexp.QuoteMeta(word)+`$`).MatchString(hint) {
			t.Errorf("volctl %q: the error suggests %q, the word it refused:\n%s", args, word, msg)
		}
		// The line it advises, without the `--`, runs as printed.
		advised := lastAdvised(msg, "volctl ")
		if advised == "" || strings.Contains(advised, " -- ") {
			t.Errorf("volctl %q: no line without `--` advised:\n%s", args, msg)
		} else if perr := parseAdvised(t, advised); perr != nil {
			t.Errorf("volctl %q: the advised `%s` is refused: %v", args, advised, perr)
		}
	}
}

// volume expand refuses a --limit of 0 bytes up front, a usage error naming the flag and the
// value as typed ("--limit \"0.4B\" is 0 bytes"), but a --size of 0 bytes ("0", or "0.5B",
// which reads as 0) is left to the engine, after the volume's plugin is connected: with the
// plugin up it says only "the new size must be positive" of a size typed positive, naming
// neither --size nor what it was read as; with the plugin down it is exit 1, "plugin "mem":
// socket ... does not exist (is the plugin running?)": a runtime error a script retries,
// blaming the plugin for the command line's mistake, which restarting the plugin only turns
// into the refusal that was due. A --size of 0 bytes must be refused as --limit's is, before
// the engine is asked: exit 2, naming --size.
// Found by helper review83 (cliinput).
func TestExpandSizeOfZeroBytesIsRefusedAsTheLimitIs(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	code, out, errOut := h.runReported("volume", "expand", "db", "--size", "0.5B")
	if code != ExitUsage || !strings.Contains(errOut, "--size") {
		t.Errorf("volume expand db --size 0.5B (0 bytes): exit %d, want %d naming --size and what it reads as\n%s%s", code, ExitUsage, out, errOut)
	}
	h.stop() // the plugin down: the refusal is the command line's, not the plugin's
	code, out, errOut = h.runReported("volume", "expand", "db", "--size", "0")
	if code != ExitUsage || !strings.Contains(errOut, "--size") {
		t.Errorf("volume expand db --size 0, its plugin down: exit %d, want %d naming --size (a size of 0 bytes is refused whatever the plugin)\n%s%s", code, ExitUsage, out, errOut)
	}
}
