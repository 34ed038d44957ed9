package cli

import (
	"strings"
	"testing"
)

// adviceOf runs volctl with args (in a state dir of the test's own), which must be refused
// as a usage error, and returns the volctl command line the refusal advises, last in
// backquotes.
func adviceOf(t *testing.T, args ...string) (said, advised string) {
	t.Helper()
	_, err := execRoot(t, append([]string{"--state-dir", t.TempDir()}, args...)...)
	if err == nil || ExitCode(err) != ExitUsage {
		t.Fatalf("volctl %q: err = %v (exit %d), want a usage error advising a line", args, err, ExitCode(err))
	}
	said = err.Error()
	advised = lastAdvised(said, "volctl ")
	if advised == "" {
		t.Fatalf("volctl %q: no `volctl ...` advised:\n%s", args, said)
	}
	return said, advised
}

// TestArgumentAdvisedAsAFlagShowsNoSecretGiven: lastAsFlag's advice keeps the other flags the
// user gave (changedFlags), each value as given: `volctl volume snapshot list hp --secret
// token=VALUE` is refused with "takes the plugin as a flag: `volctl volume snapshot list
// --plugin hp --secret token=VALUE`", the secret's value written out on stderr (a CI log, a
// terminal being shared), where every other refusal of --secret names the key, never the
// value (secretFlags.parse), and --verbose's RPC traces redact it. Correct: the advice names
// the secret's key without its value (a placeholder, or --secret-file), as reconcile's
// `--secret KEY=VALUE` advice does.
// Found by helper review83 (ownc).
func TestArgumentAdvisedAsAFlagShowsNoSecretGiven(t *testing.T) {
	const secret = "s3cr3t-pa55w0rd"
	said, _ := adviceOf(t, "volume", "snapshot", "list", "hp", "--secret", "token="+secret)
	if strings.Contains(said, secret) {
		t.Errorf("the refusal of a plugin given as an argument shows the --secret value given:\n%s", said)
	}
	// The key kept, its value read without echo: the line still runs.
	advised := lastAdvised(said, "volctl ")
	if !strings.Contains(advised, "--secret-file token=-") {
		t.Errorf("advice %q: want the secret's key kept, as --secret-file token=-", advised)
	} else if err := parseAdvised(t, advised); err != nil {
		t.Errorf("advice %q is refused: %v", advised, err)
	}
}

// TestDoubleDashRefusalShowsNoSecretGiven: the refusal of a command name written after `--`
// (rejectUnknownSubcommands, lineWithoutDashes) prints the line without the `--`, every flag
// with its value: `volctl volume snapshot -- list --plugin hp --secret token=VALUE` writes
// the secret's value on stderr. Correct: the secret's key without its value, as every other
// message of --secret does.
// Found by helper review83 (ownc).
func TestDoubleDashRefusalShowsNoSecretGiven(t *testing.T) {
	const secret = "s3cr3t-pa55w0rd"
	said, _ := adviceOf(t, "volume", "snapshot", "--", "list", "--plugin", "hp", "--secret", "token="+secret)
	if strings.Contains(said, secret) {
		t.Errorf("the refusal of a command name after `--` shows the --secret value given:\n%s", said)
	}
}

// TestArgumentAdvisedAsAFlagKeepsABooleanGivenFalse: changedFlags writes a boolean given a
// value other than its bare one as `--name value`: `volctl volume claim db web-0
// --read-only=false` (a script's `--read-only=$RO`) is advised as `volctl volume claim db
// --alloc web-0 --read-only false`, which pflag reads as --read-only (true) and an argument
// "false": followed, the advice is refused ("accepts 1 arg(s), received 2"), and it asks for
// a read claim where the user's line asked for a write one. Correct: a flag with a bare value
// (NoOptDefVal) given another is written `--name=value` (or left out when it is the default).
// Found by helper review83 (ownc).
func TestArgumentAdvisedAsAFlagKeepsABooleanGivenFalse(t *testing.T) {
	for _, args := range [][]string{
		{"volume", "claim", "db", "web-0", "--read-only=false"},
		{"volume", "release", "db", "web-0", "--json=false"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, advised := adviceOf(t, args...)
			if err := parseAdvised(t, advised); err != nil {
				t.Fatalf("volctl %s advises `%s`, which volctl refuses: %v", strings.Join(args, " "), advised, err)
			}
			cmd, rest, err := findAdvised(t, advised)
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"read-only", "json"} {
				if f := cmd.Flags().Lookup(name); f != nil && f.Value.String() != "false" {
					t.Errorf("volctl %s advises `%s`: --%s is %s there, false in the line typed", strings.Join(args, " "), advised, name, f.Value)
				}
			}
		})
	}
}

// TestDoubleDashRefusalTakesAShorthandWithItsValueAsAFlag: lineWithoutDashes sorts a word into
// a flag only when it is `--name`, `--name=value` or a bare `-n`: a shorthand with its value
// attached (`-n5`, as head(1) is written; `-t{{.id}}`) is taken for an argument, and the
// advice puts it after a `--` of its own: `volctl -- events -n5` is advised as `volctl events
// -- -n5`, which events refuses ("accepts 0 arg(s), received 1"). Correct: the word as the
// flag it is (`volctl events -n5`, or `-n 5`).
// Found by helper review83 (ownc).
func TestDoubleDashRefusalTakesAShorthandWithItsValueAsAFlag(t *testing.T) {
	for _, args := range [][]string{
		{"--", "events", "-n5"},
		{"volume", "--", "status", "db", "-q.id"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, advised := adviceOf(t, args...)
			if err := parseAdvised(t, advised); err != nil {
				t.Fatalf("volctl %s advises `%s`, which volctl refuses: %v", strings.Join(args, " "), advised, err)
			}
		})
	}
}

// TestDoubleDashRefusalAdviceKeepsASecondDoubleDash: lineWithoutDashes takes a second `--`,
// written to end the subcommand's flags before an ID that starts with "-" (`volctl volume
// snapshot -- delete hp -- -snap`), for an argument, and writes a `--` of its own before the
// arguments: `volctl volume snapshot delete -- hp -- -snap`, three arguments, refused. Correct:
// the words after the second `--` kept as arguments, that `--` written once.
// Found by helper review83 (ownc).
func TestDoubleDashRefusalAdviceKeepsASecondDoubleDash(t *testing.T) {
	args := []string{"volume", "snapshot", "--", "delete", "hp", "--", "-snap"}
	_, advised := adviceOf(t, args...)
	if err := parseAdvised(t, advised); err != nil {
		t.Fatalf("volctl %s advises `%s`, which volctl refuses: %v", strings.Join(args, " "), advised, err)
	}
}
