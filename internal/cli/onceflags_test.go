package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestFlagGivenTwiceWithAnotherValueIsRefused: a flag taking one value given twice with two
// values (a wrapper's default, then the user's; a line edited in a hurry) is a usage error
// naming the flag and both values, before anything is done; pflag took the last one, and the
// command acted on it. Given again with the same value, it is taken; repeatable flags repeat.
func TestFlagGivenTwiceWithAnotherValueIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args        []string
		flag, first string
		second      string
	}{
		{[]string{"volume", "claim", "db", "--alloc", "web-0", "--alloc", "web-1"}, "alloc", "web-0", "web-1"},
		{[]string{"volume", "release", "db", "--alloc=web-0", "--alloc=web-1"}, "alloc", "web-0", "web-1"},
		{[]string{"volume", "status", "-t", "{{.id}}", "-t", "{{.name}}"}, "template", "{{.id}}", "{{.name}}"},
		{[]string{"volume", "status", "--jq", ".id", "-q", ".name"}, "jq", ".id", ".name"},
		{[]string{"--state-dir", dir + "/a", "volume", "status", "--state-dir", dir + "/b"}, "state-dir", dir + "/a", dir + "/b"},
		{[]string{"volume", "detach", "db", "--force", "--force=false"}, "force", "true", "false"},
		{[]string{"plugin", "register", "--id", "hp", "--socket", "/run/a.sock", "--socket", "/run/b.sock", "--wait", "0"}, "socket", "/run/a.sock", "/run/b.sock"},
		{[]string{"plugin", "register", "--id", "hp", "--socket", "/run/a.sock", "--timeout", "1m", "--timeout", "2m", "--wait", "0"}, "timeout", "1m", "2m"},
		{[]string{"volume", "expand", "db", "--size", "10GiB", "--size", "20GiB"}, "size", "10GiB", "20GiB"},
		{[]string{"events", "--kind", "claim", "--kind", "release"}, "kind", "claim", "release"},
		{[]string{"events", "-n", "5", "--limit", "6"}, "limit", "5", "6"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			args := append([]string{"--state-dir", dir}, tt.args...)
			if tt.flag == "state-dir" {
				args = tt.args
			}
			err := runCmd(t, NewRootCmd(NewFactory(ios)), args...)
			if err == nil || ExitCode(err) != ExitUsage {
				t.Fatalf("err = %v (exit %d), want a usage error", err, ExitCode(err))
			}
			for _, want := range []string{"--" + tt.flag, `"` + tt.first + `"`, `"` + tt.second + `"`, "give it once"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to name %s", err, want)
				}
			}
		})
	}
	// The same value again means one thing; a repeatable flag repeats. --help ends each once
	// its flags are parsed.
	for _, args := range [][]string{
		{"volume", "status", "--json", "--json"},
		{"-v", "volume", "status", "-v"},
		{"volume", "claim", "db", "--alloc", "web-0", "--alloc", "web-0"},
		{"plugin", "register", "--timeout", "1m", "--timeout", "60s"},
		{"volume", "snapshot", "create", "db", "--parameter", "a=1", "--parameter", "b=2"},
	} {
		ios, _, _, _ := iostreams.Test()
		if err := runCmd(t, NewRootCmd(NewFactory(ios)), append(append([]string{"--state-dir", dir}, args...), "--help")...); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// TestFlagGivenEmptyIsRefused: a flag whose default is empty, given empty (a variable left
// unset: --state-dir "$STATE", events --volume "$V"), was the flag not given: the state dir
// fell back to $VOLCTL_STATE_DIR or /var/lib/volctl, the system's, and the events filter to
// every volume's. It is refused as an empty argument is, naming the flag.
func TestFlagGivenEmptyIsRefused(t *testing.T) {
	// Where the old code went for an empty --state-dir: never /var/lib/volctl.
	t.Setenv("VOLCTL_STATE_DIR", t.TempDir())
	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"--state-dir", "", "volume", "status"}, "state-dir"},
		{[]string{"volume", "status", "--state-dir="}, "state-dir"},
		{[]string{"events", "--volume", ""}, "volume"},
		{[]string{"volume", "snapshot", "list", "--plugin="}, "plugin"},
		{[]string{"volume", "status", "-t", ""}, "template"},
		{[]string{"volume", "status", "--jq", ""}, "jq"},
	} {
		ios, _, _, _ := iostreams.Test()
		err := runCmd(t, NewRootCmd(NewFactory(ios)), tt.args...)
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--"+tt.flag+" is empty") {
			t.Errorf("%q: %v (exit %d), want a usage error saying --%s is empty", tt.args, err, ExitCode(err), tt.flag)
		}
	}
}

// TestTextFlagWithADefaultGivenEmptyIsRefused: a text flag with a default given empty (a
// variable left unset) was taken to its command, which judged only some: export nomad's
// --driver "" and --nomad-data-dir "" were exec and /opt/nomad/data, silently, and agent
// --log-format "" text. Each is a usage error naming the flag and its default, before
// anything is written; so is a relative --nomad-data-dir, which the plugin job's
// stage_publish_base_dir would have read from the task's working directory.
func TestTextFlagWithADefaultGivenEmptyIsRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "nomad", "--all", "--out", out, "--driver", ""}, "--driver is empty: give a value, or leave the flag out for the default, exec"},
		{[]string{"export", "nomad", "--all", "--out", out, "--nomad-data-dir="}, "--nomad-data-dir is empty: give a value, or leave the flag out for the default, /opt/nomad/data"},
		{[]string{"export", "nomad", "--all", "--out", out, "--nomad-data-dir", "data"}, `--nomad-data-dir "data" is not an absolute path`},
		{[]string{"export", "nomad", "--all", "--out", ""}, "--out is empty: give a value, or leave the flag out for the default, nomad"},
		{[]string{"agent", "--log-format", ""}, "--log-format is empty: give a value, or leave the flag out for the default, text"},
		{[]string{"plugin", "register", "--id", "hp", "--socket", "/run/hp.sock", "--type="}, "--type is empty"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			args := append([]string{"--state-dir", filepath.Join(dir, "state")}, tt.args...)
			err := runCmd(t, NewRootCmd(NewFactory(ios)), args...)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v (exit %d), want a usage error saying %q", err, ExitCode(err), tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused export wrote %s: %v", out, err)
			}
		})
	}
}

// TestRepeatableFlagGivenEmptyIsRefused: a repeatable flag given an empty value (a variable
// left unset) was taken: export nomad's --group "" looked for a group named "" (exit 1),
// --group-file "" failed on "read : no such file or directory", naming nothing, and
// --datacenter "" wrote jobs with datacenters = [""], which Nomad refuses. Each is a usage
// error naming the flag, before anything is written; --arg "", an empty argument of the
// task's command, is taken.
func TestRepeatableFlagGivenEmptyIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"export", "nomad", "--group", ""}, "group"},
		{[]string{"export", "nomad", "--group", "web", "--group="}, "group"},
		{[]string{"export", "nomad", "--group-file", ""}, "group-file"},
		{[]string{"export", "nomad", "--all", "--datacenter", ""}, "datacenter"},
		{[]string{"volume", "claim", "db", "--alloc", "a", "--mount-flag="}, "mount-flag"},
		{[]string{"volume", "snapshot", "create", "db", "--parameter", ""}, "parameter"},
		{[]string{"volume", "snapshot", "list", "--secret", ""}, "secret"},
		{[]string{"volume", "snapshot", "list", "--secret-file", ""}, "secret-file"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			args := append([]string{"--state-dir", filepath.Join(dir, "state")}, tt.args...)
			if tt.args[0] == "export" {
				args = append(args, "-o", filepath.Join(dir, "out"))
			}
			err := runCmd(t, NewRootCmd(NewFactory(ios)), args...)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--"+tt.flag+" is empty") {
				t.Errorf("%v (exit %d), want a usage error saying --%s is empty", err, ExitCode(err), tt.flag)
			}
		})
	}
	ios, _, _, _ := iostreams.Test()
	err := runCmd(t, NewRootCmd(NewFactory(ios)), "--state-dir", filepath.Join(dir, "state"), "export", "nomad", "--all", "--arg", "", "-o", filepath.Join(dir, "args"))
	if err != nil {
		t.Errorf("export nomad --arg '': %v, want it taken", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("a refused export wrote %s: %v", filepath.Join(dir, "out"), err)
	}
}
