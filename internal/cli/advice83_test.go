package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestAdviceOfRefusalsAndKeptClaimsRunsAsPrintedAndKeepsTheLine holds command lines volctl
// prints for the user to run instead of, or after, the line they typed: each, run as printed,
// must not meet the same refusal again, and must mean the line the user typed, changed only where
// the message says (the flags given kept).
//
// The `--` refusal (root.go, rejectUnknownSubcommands: "\"status\" after `--` is an argument,
// not the command ...; leave it out: `...`") builds its advice with shellquote.Command(group,
// args...), which puts `--` back in front of every word as soon as one starts with "-": for
// `volctl volume -- status db --json` it advises `volctl volume -- status db --json`, the very
// line it refused (the same for `volume -- claim db --alloc web-0`, and for a snapshot whose ID
// starts with "-", which ValidateNewName allows). Followed, the advice meets the same refusal,
// forever. Correct: the line with that `--` left out, as the message says (the subcommand's own
// `--` after its name where an argument starts with "-").
//
// lastAsFlag (root.go: "volctl volume claim takes the alloc as a flag: `volctl volume claim db
// --alloc web-0`") rebuilds the line from the positional arguments alone, dropping every flag
// the user gave: `volume claim db web-0 --read-only` is advised as a write claim, `events db
// --follow` as a one-off listing, `snapshot list hp --json` as a table a script cannot read.
// Correct: the flags given kept, the last argument moved to its flag.
//
// claimKeptNext (output.go: "the claim stands: `volctl volume claim db --alloc a` prints its
// target path again") names the claim without --read-only: for a read claim whose result was
// not printed (a reader gone, a --jq failing on it), the advised line asks for a write claim,
// which heldConflict refuses (exit 4, "alloc \"a\" already holds a read claim ... release it
// first") instead of printing the path. Correct: the advice claims as the claim is held
// (--read-only for a read claim).
// Found by helper review83 (advice).
func TestAdviceOfRefusalsAndKeptClaimsRunsAsPrintedAndKeepsTheLine(t *testing.T) {
	dir := t.TempDir()
	refused := func(args ...string) func(t *testing.T) (string, string) {
		return func(t *testing.T) (string, string) {
			_, err := execRoot(t, append([]string{"--state-dir", dir}, args...)...)
			if err == nil || ExitCode(err) != ExitUsage {
				t.Fatalf("volctl %q: err = %v (exit %d), want a usage error advising a line", args, err, ExitCode(err))
			}
			return strings.Join(args, " "), err.Error()
		}
	}
	var h *cliHarness // for the claim kept: made by its row
	for _, tt := range []struct {
		name string
		// advice runs what the user typed, returning it and what volctl said.
		advice func(t *testing.T) (typed, said string)
		// prefix picks the advised command from what was said.
		prefix string
		// keep are flags of the typed line the advised one must give too.
		keep []string
		// follow, when set, runs the advised line's words and checks the outcome.
		follow func(t *testing.T, words []string)
	}{
		{name: "double dash before a command with a flag", advice: refused("volume", "--", "status", "db", "--json"), keep: []string{"json"}},
		{name: "double dash before a claim", advice: refused("volume", "--", "claim", "db", "--alloc", "web-0"), keep: []string{"alloc"}},
		{name: "double dash before a snapshot ID with a dash", advice: refused("volume", "snapshot", "--", "delete", "hp", "-snap")},
		{name: "alloc as an argument of a read claim", advice: refused("volume", "claim", "db", "web-0", "--read-only"), keep: []string{"read-only"}},
		{name: "alloc as an argument of a release for a script", advice: refused("volume", "release", "db", "web-0", "--json"), keep: []string{"json"}},
		// Parsed, not run: followed, it follows until interrupted.
		{name: "volume as an argument of events followed", advice: refused("events", "db", "--follow"), keep: []string{"follow"}, follow: func(*testing.T, []string) {}},
		{name: "plugin as an argument of a snapshot list for a script", advice: refused("volume", "snapshot", "list", "hp", "--json"), keep: []string{"json"}},
		{
			name: "read claim kept, its result unprinted",
			advice: func(t *testing.T) (string, string) {
				requireMount(t) // it claims
				h = newCLIHarness(t)
				h.createVolume(t, "db", spec.MultiNodeMultiWriter)
				args := []string{"volume", "claim", "db", "--alloc", "a", "--read-only", "--jq", `error("no")`}
				code, _, errOut := h.runReported(args...)
				if code != ExitError || !strings.Contains(errOut, "the claim stands") {
					t.Fatalf("volctl %q: exit %d, want %d saying the claim stands:\n%s", args, code, ExitError, errOut)
				}
				return strings.Join(args, " "), errOut
			},
			prefix: "volctl volume claim ",
			keep:   []string{"read-only"},
			follow: func(t *testing.T, words []string) {
				code, out, errOut := h.runReported(words...)
				if code != ExitOK || strings.TrimSpace(out) == "" {
					t.Errorf("the advised claim, said to print the kept claim's target path again: exit %d, stdout %q\n%s", code, out, errOut)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			typed, said := tt.advice(t)
			prefix := tt.prefix
			if prefix == "" {
				prefix = "volctl "
			}
			advised := lastAdvised(said, prefix)
			if advised == "" {
				t.Fatalf("volctl %s: no `%s...` advised:\n%s", typed, prefix, said)
			}
			if perr := parseAdvised(t, advised); perr != nil {
				t.Fatalf("volctl %s advises `%s`, which volctl refuses: %v", typed, advised, perr)
			}
			words := advisedArgs(t, advised)
			if tt.follow == nil {
				// Run as printed: not the same refusal again.
				_, again := execRoot(t, append([]string{"--state-dir", dir}, words...)...)
				if again != nil && strings.Contains(again.Error(), "after `--` is an argument") {
					t.Errorf("volctl %s advises `%s`, which is refused the same way:\n%v", typed, advised, again)
				}
			}
			cmd, rest, ferr := findAdvisedArgs(words)
			if ferr != nil {
				t.Fatalf("volctl %s advises `%s`: %v", typed, advised, ferr)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Fatalf("volctl %s advises `%s`: %v", typed, advised, err)
			}
			for _, name := range tt.keep {
				if fl := cmd.Flags().Lookup(name); fl == nil || !fl.Changed {
					t.Errorf("volctl %s advises `%s`, without the --%s given: it means another command", typed, advised, name)
				}
			}
			if tt.follow != nil {
				tt.follow(t, words)
			}
		})
	}
}
