package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestFlagWinsOverItsVariable: a flag given wins over the variable it stands for, as
// --state-dir wins over VOLCTL_STATE_DIR and --socket over CSI_ENDPOINT; --verbose=false
// did not over VOLCTL_LOG=debug, exported for a session, so one command could not be run
// quiet. Without the flag the variable holds, in any case; any other value is the default.
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
		version.RunE = func(*cobra.Command, []string) error { got = f.Verbose(); return nil }
		root.SetArgs(append([]string{"version"}, tt.args...))
		if err := root.Execute(); err != nil || got != tt.want {
			t.Errorf("VOLCTL_LOG=%q volctl version %s: verbose %v, %v; want %v", tt.env, strings.Join(tt.args, " "), got, err, tt.want)
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
