package cli

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestFlagWinsOverItsVariable: a flag given wins over the variable it stands for, as
// --state-dir wins over VOLCTL_STATE_DIR and --socket over CSI_ENDPOINT; --verbose=false
// did not over VOLCTL_LOG=debug, exported for a session, so one command could not be run
// quiet. Without the flag the variable holds, in any case.
func TestFlagWinsOverItsVariable(t *testing.T) {
	for _, tt := range []struct {
		env  string
		args []string
		want bool
	}{
		{"debug", nil, true},
		{"DEBUG", nil, true},
		{"debug", []string{"--verbose=false"}, false},
		{"debug", []string{"-v=false"}, false},
		{"", []string{"--verbose"}, true},
		{"warn", []string{"-v"}, true},
		{"warn", nil, false},
		{"", nil, false},
		{"trace", []string{"--verbose=false"}, false},
	} {
		ios, _, _, _ := iostreams.Test()
		f := NewFactory(ios)
		f.lookupEnv = func(k string) (string, bool) {
			if k == "VOLCTL_LOG" && tt.env != "" {
				return tt.env, true
			}
			return "", false
		}
		var got bool
		root := NewRootCmd(f)
		version, _, err := root.Find([]string{"version"})
		if err != nil {
			t.Fatal(err)
		}
		version.RunE = func(*cobra.Command, []string) error { got = f.LogLevel(slog.LevelWarn) == slog.LevelDebug; return nil }
		root.SetArgs(append([]string{"version"}, tt.args...))
		if err := root.Execute(); err != nil || got != tt.want {
			t.Errorf("VOLCTL_LOG=%q volctl version %s: verbose %v, %v; want %v", tt.env, strings.Join(tt.args, " "), got, err, tt.want)
		}
	}
}

// TestLogVariableTakesTheLevelsOrIsRefused: VOLCTL_LOG was read for "debug" only: "info",
// "warn", "error" (the levels a user tries first, as the agent's log shows them) and a mistyped
// "debgu" were the default, silently, the user left to wonder why nothing changed. The four
// levels are taken, any case, by the commands' logger and the agent's; any other value is
// refused before the command does anything, exit 2, naming the variable and the values it
// takes. Set empty, it is not set.
func TestLogVariableTakesTheLevelsOrIsRefused(t *testing.T) {
	withLog := func(v string) *Factory {
		ios, _, _, _ := iostreams.Test()
		f := NewFactory(ios)
		f.lookupEnv = func(k string) (string, bool) { return v, k == "VOLCTL_LOG" }
		return f
	}
	ctx := context.Background()
	for v, want := range map[string]slog.Level{"": slog.LevelWarn, "debug": slog.LevelDebug, "info": slog.LevelInfo, "INFO": slog.LevelInfo,
		"warn": slog.LevelWarn, "Warn": slog.LevelWarn, "error": slog.LevelError, "TRACE": slog.LevelDebug, "warning": slog.LevelWarn} {
		f := withLog(v)
		var got *slog.Logger
		root := NewRootCmd(f)
		version, _, _ := root.Find([]string{"version"})
		version.RunE = func(*cobra.Command, []string) error { got = f.Logger(); return nil }
		root.SetArgs([]string{"version"})
		if err := root.Execute(); err != nil || got == nil {
			t.Errorf("VOLCTL_LOG=%q volctl version: %v; want it run", v, err)
			continue
		}
		if !got.Enabled(ctx, want) || got.Enabled(ctx, want-1) {
			t.Errorf("VOLCTL_LOG=%q: the commands' logger does not log from %s up", v, want)
		}
		var agentLevel slog.Level
		root = newRoot(f, []*cobra.Command{newCmdAgent(f, func(o *AgentOptions) error { agentLevel = o.LogLevel; return nil })})
		root.SetArgs([]string{"agent"})
		if v == "" {
			want = slog.LevelInfo // the agent's default
		}
		if err := root.Execute(); err != nil || agentLevel != want {
			t.Errorf("VOLCTL_LOG=%q volctl agent: level %s, %v; want %s", v, agentLevel, err, want)
		}
	}
	for _, v := range []string{"verbose", "debgu", "1", "fatal", "tracing", " debug", "debug\n"} {
		f := withLog(v)
		ran := false
		root := NewRootCmd(f)
		version, _, _ := root.Find([]string{"version"})
		version.RunE = func(*cobra.Command, []string) error { ran = true; return nil }
		root.SetArgs([]string{"version"})
		err := root.Execute()
		if err == nil || ran || ExitCode(err) != ExitUsage ||
			!strings.Contains(err.Error(), "VOLCTL_LOG="+strconv.Quote(v)+" is not a log level: set it to debug") || !strings.Contains(err.Error(), "info, warn or error") {
			t.Errorf("VOLCTL_LOG=%q volctl version: ran %v, %v (exit %d); want it refused before it ran, exit 2, naming the variable and its levels", v, ran, err, ExitCode(err))
		}
	}
}

// TestEveryVariableIsDocumentedInOnePlace: every environment variable volctl reads (the
// Getenv and LookupEnv calls of its code, the NOMAD_* the nomad commands' help names) is in
// README's Environment paragraph, the one place that says what each does and which flag wins
// over it. Before, they were told of here and there (agent.md, architecture.md, help texts)
// and some nowhere a user would look (COLORFGBG, COLUMNS, XDG_STATE_HOME).
func TestEveryVariableIsDocumentedInOnePlace(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(readme), "\nEnvironment:")
	section, _, _ = strings.Cut(section, "\n\n")
	if !found {
		t.Fatal("README.md has no paragraph beginning \"Environment:\"")
	}
	// The variables of tests and of volctl's own processes are no user's to set.
	internal := map[string]bool{"CI": true, "GORACE": true, "GOTMPDIR": true, "TMPDIR": true}
	read := regexp.MustCompile(`(?:Getenv|LookupEnv|getenv|lookupEnv)\("([A-Z][A-Z0-9_]*)"\)`)
	names := map[string]string{}
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.Contains(path, "/internal/tools/") || strings.Contains(path, "/internal/testproc/") || strings.Contains(path, "test/") {
			return err
		}
		src, err := os.ReadFile(path)
		if !bytes.Contains(src, []byte("env(\"")) && !bytes.Contains(src, []byte("Env(\"")) {
			return err // no call the pattern matches: the regexp over every file cost seconds under -race
		}
		for _, m := range read.FindAllStringSubmatch(string(src), -1) {
			if !internal[m[1]] {
				names[m[1]] = path
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	help, _ := execRoot(t, "nomad", "--help")
	for _, m := range regexp.MustCompile(`NOMAD_[A-Z_]+`).FindAllString(help, -1) {
		names[m] = "volctl nomad --help"
	}
	if len(names) < 15 {
		t.Fatalf("found %d variables (%v): the scan is broken", len(names), names)
	}
	for name, where := range names {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(section) {
			t.Errorf("%s (read in %s) is not in README.md's Environment paragraph", name, where)
		}
	}
}

// review26d: VOLCTL_LOG=trace (Nomad's and Consul's most verbose level) in a shell's
// environment made `source <(volctl completion bash)` print an error and completion stop
// working, and `volctl help X` refused where `volctl X --help` ran: commands that log nothing
// do not check the variable. And --verbose=false beside VOLCTL_LOG=error logged from warn, more
// than the user asked for: it turns debug off, not a quieter level on.
func TestLogVariableLeavesCommandsThatLogNothing(t *testing.T) {
	run := func(env string, args ...string) (string, error) {
		ios, _, out, _ := iostreams.Test()
		f := NewFactory(ios)
		f.lookupEnv = func(k string) (string, bool) { return env, k == "VOLCTL_LOG" }
		root := NewRootCmd(f)
		root.SetArgs(args)
		err := root.Execute()
		return out.String(), err
	}
	for _, args := range [][]string{{"help"}, {"help", "volume", "claim"}, {"completion", "bash"}, {"completion", "zsh"}} {
		out, err := run("bogus", args...)
		if err != nil || out == "" {
			t.Errorf("VOLCTL_LOG=bogus volctl %s: %v, %d bytes out; want it to run as without the variable", strings.Join(args, " "), err, len(out))
		}
	}
	if _, err := run("bogus", "version"); ExitCode(err) != ExitUsage {
		t.Errorf("VOLCTL_LOG=bogus volctl version: %v; want it refused, exit 2", err)
	}

	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios)
	f.lookupEnv = func(k string) (string, bool) { return "error", k == "VOLCTL_LOG" }
	var got slog.Level
	root := NewRootCmd(f)
	version, _, _ := root.Find([]string{"version"})
	version.RunE = func(*cobra.Command, []string) error { got = f.LogLevel(slog.LevelWarn); return nil }
	root.SetArgs([]string{"version", "--verbose=false"})
	if err := root.Execute(); err != nil || got != slog.LevelError {
		t.Errorf("VOLCTL_LOG=error volctl version --verbose=false: level %s, %v; want error, the quieter level the variable names", got, err)
	}
}
