package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestEveryDurationFlagSaysWhatIsWrong: the agent's duration flags said what was wrong with a
// value they could not read (spec.ParseDuration), but plugin probe --timeout, plugin register
// --timeout and --wait, tui --refresh and --probe kept Go's "time: invalid duration" for all
// of it, and "time: unknown unit "e"" for an exponent. Every duration flag of the tree, found
// by its type, says the same words through the whole command line, so a flag added later is
// held to it too; events --since, a duration or a time, says what is wrong with the duration.
func TestEveryDurationFlagSaysWhatIsWrong(t *testing.T) {
	cases := []struct{ value, want string }{
		{"9999999999999h", `"9999999999999h" is longer than the longest duration volctl holds`},
		{"1e3s", `"1e3s" is not a duration: a duration takes no exponent`},
		{"30", `"30" is not a duration: it has no unit (ns, us, ms, s, m or h)`},
		{"soon", `"soon" is not a duration`},
	}
	flags := flagsOfType(func(typ string) bool { return typ == "duration" })
	if len(flags) < 10 {
		t.Fatalf("found %d duration flags (%v), want the agent's, plugin probe's, plugin register's and tui's", len(flags), flags)
	}
	for _, flag := range flags {
		args := strings.Fields(strings.TrimPrefix(flag, "volctl "))
		for _, tt := range cases {
			_, err := execRoot(t, append(args, tt.value)...)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "time:") {
				t.Errorf("%s %s: err = %v (exit %d), want exit %d saying %q", flag, tt.value, err, ExitCode(err), ExitUsage, tt.want)
			}
		}
	}
	for _, tt := range cases[:3] {
		_, err := execRoot(t, "events", "--since", tt.value)
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("events --since %s: err = %v (exit %d), want exit %d saying %q and naming RFC 3339", tt.value, err, ExitCode(err), ExitUsage, tt.want)
		}
	}
}

// TestEveryIntFlagSaysWhatIsWrong: a number flag given what is no number, or one past int64,
// was refused in Go's words, `strconv.ParseInt: parsing "1x": invalid syntax`, which say
// neither what is wrong to a user nor what to give. Every int flag says it (intVar), exit 2,
// and help shows its type as before.
func TestEveryIntFlagSaysWhatIsWrong(t *testing.T) {
	cases := []struct{ value, want string }{
		{"1x", `invalid argument "1x" for `},
		{"1x", `flag: "1x" is not a whole number`},
		{"1.5", `"1.5" is not a whole number`},
		{"99999999999999999999", `"99999999999999999999" is out of range: give a whole number from -9223372036854775808 to 9223372036854775807`},
	}
	flags := flagsOfType(func(typ string) bool { return strings.HasPrefix(typ, "int") || strings.HasPrefix(typ, "uint") })
	if len(flags) < 3 {
		t.Fatalf("found %d int flags (%v), want events --limit, plugin serve hostpath --max-volumes and tui --events", len(flags), flags)
	}
	for _, flag := range flags {
		args := strings.Fields(strings.TrimPrefix(flag, "volctl "))
		for _, tt := range cases {
			_, err := execRoot(t, append(args, tt.value)...)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "strconv") {
				t.Errorf("%s %s: err = %v (exit %d), want exit %d saying %q", flag, tt.value, err, ExitCode(err), ExitUsage, tt.want)
			}
		}
	}
}

// flagsOfType lists the flags of the whole command tree whose type match takes, as
// "volctl tui --refresh".
func flagsOfType(match func(typ string) bool) []string {
	ios, _, _, _ := iostreams.Test()
	var flags []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			if match(fl.Value.Type()) {
				flags = append(flags, c.CommandPath()+" --"+fl.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(NewFactory(ios)))
	return flags
}

// TestEveryDurationFlagIsBounded: a duration flag that is a timeout or a period is held to
// bounds when it is set, exit 2 naming them, as the agent's are: plugin probe --timeout 1ns
// failed every probe of a healthy plugin ("did not complete the gRPC handshake within 1ns"),
// and tui --refresh 1ns or --probe 1ns read the state, or probed every plugin, back to back.
// Found by type through the whole tree, so a flag added later is held to it too.
func TestEveryDurationFlagIsBounded(t *testing.T) {
	t.Setenv("VOLCTL_STATE_DIR", t.TempDir())
	unbounded := map[string]string{
		// A wait, not a timeout: less fails sooner, and 0 fails at once, as documented.
		"volctl plugin register --wait": "",
		// 0 is its default; the plugin it declares is held to 1s–24h by Plugin.Validate
		// (TestPluginTimeoutOutsideItsBoundsIsRefused), as a spec's timeout is.
		"volctl plugin register --timeout": "",
	}
	for _, flag := range flagsOfType(func(typ string) bool { return typ == "duration" }) {
		if _, ok := unbounded[flag]; ok {
			continue
		}
		args := strings.Fields(strings.TrimPrefix(flag, "volctl "))
		for _, tt := range []struct{ value, want string }{
			{"1ns", "1ns is less than the least it may be"},
			{"1000000h", "1000000h0m0s is more than the most it may be"},
			{"0", "must be more than zero"},
		} {
			_, err := execRoot(t, append(args, tt.value)...)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s %s: err = %v (exit %d), want exit %d saying %q", flag, tt.value, err, ExitCode(err), ExitUsage, tt.want)
			}
		}
	}
}
