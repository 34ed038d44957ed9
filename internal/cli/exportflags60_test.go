package cli

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// The plugin job export nomad writes for a plugin with an exec block reads the block's
// arguments as `volctl plugin serve hostpath` parses them: serve's own flag parsing, flags given
// twice refused as on the command line (servedArgs), is the reference here. A flag given twice
// alike is one value, and nothing after "--" is a flag; one given twice with two values, which
// serve refuses, is refused (TestExportNomadRefusesAFlagServeRefuses). Before round 60 the first
// --max-volumes or --root decided; round 60 took the last, which serve never runs with.
func TestExportNomadPluginJobReadsTheExecBlocksFlagsAsServeDoes(t *testing.T) {
	for _, args := range []string{
		"--root /r --node-id n1 --max-volumes 2",
		"--root /r --node-id n1 --max-volumes 2 --max-volumes 5",
		"--root /r --node-id n1 --max-volumes=5 --max-volumes 05",
		"--root /r --node-id n1 --max-volumes 5 --max-volumes=0",
		"--root /a --node-id n1 --root /b",
		"--root=/a --node-id n1 --root /a --enable-attach",
		"--root /a --root=/b --node-id n1 --enable-attach=false",
		"--root /r --node-id n1 --enable-attach --enable-attach=true --max-volumes 3",
		"--root /r --node-id n1 --enable-attach --enable-attach=false",
		"--socket --root --root /r --node-id n1",
	} {
		fields := strings.Fields(args)
		o, err := servedArgs(t, fields...)
		name, _, _, twice := firstTwice(fields)
		if err != nil {
			if !twice || !strings.Contains(err.Error(), name+" was given before") {
				t.Errorf("serve refuses %q (%v), and spec.FlagTwice says %v of %s", args, err, twice, name)
			}
			continue
		}
		if twice {
			t.Errorf("spec.FlagTwice says %q gives %s twice, and serve takes it", args, name)
			continue
		}
		served := servedAs(fields, true, nil)
		if got := slices.Contains(served, "--enable-attach"); got != o.EnableAttach {
			t.Errorf("exec args %q: the plugin job attaches %v, serve %v", args, got, o.EnableAttach)
		}
		want := []string(nil)
		if o.EnableAttach {
			want = append(want, "--enable-attach")
		}
		if strings.Contains(args, "--max-volumes") {
			want = append(want, "--max-volumes", strconv.FormatInt(o.MaxVolumes, 10))
		}
		if i := slices.Index(served, "--max-volumes"); i >= 0 && i+1 < len(served) {
			if n, err := strconv.ParseInt(served[i+1], 10, 64); err == nil {
				served[i+1] = strconv.FormatInt(n, 10) // 05 is 5 to serve: the job may write either
			}
		}
		if !slices.Equal(served, want) {
			t.Errorf("exec args %q: the plugin job is served with %q, serve with %q", args, served, want)
		}
		if got := spec.FlagValue(fields, "--root"); got != o.Root {
			t.Errorf("exec args %q: the plugin job's root is %q, serve's %q", args, got, o.Root)
		}
	}
	// After "--" serve reads no flag (and refuses the arguments): none is carried over.
	for _, args := range []string{"--root /r -- --enable-attach", "--root /r -- --max-volumes 9"} {
		fields := strings.Fields(args)
		if served := servedAs(fields, true, nil); len(served) != 0 {
			t.Errorf("exec args %q: the plugin job is served with %q, read after \"--\"", args, served)
		}
	}
}

// servedArgs parses args as `volctl plugin serve hostpath` does on the command line, a flag
// given twice with two values refused (refuseRepeatedFlags, which the root command applies).
func servedArgs(t *testing.T, args ...string) (PluginServeHostpathOptions, error) {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	var got PluginServeHostpathOptions
	cmd := newCmdPluginServeHostpath(NewFactory(ios), func(o *PluginServeHostpathOptions) error { got = *o; return nil })
	refuseRepeatedFlags(cmd)
	return got, runCmd(t, cmd, args...)
}

// firstTwice is the first serve flag args give twice with two values (spec.FlagTwice).
func firstTwice(args []string) (name, first, other string, twice bool) {
	for _, name := range slices.Sorted(maps.Keys(spec.ServeFlags)) {
		if first, other, twice := spec.FlagTwice(args, name); twice {
			return name, first, other, true
		}
	}
	return "", "", "", false
}

// spec.ServeFlags, by which validate and export read an exec block's arguments, are the flags
// of `volctl plugin serve hostpath`, each of the value type the command's has.
func TestServeFlagsAreTheCommands(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	cmd := newCmdPluginServeHostpath(NewFactory(ios), nil)
	got := map[string]string{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		got["--"+f.Name] = f.Value.Type()
	})
	if !maps.Equal(got, spec.ServeFlags) {
		t.Errorf("plugin serve hostpath's flags are %v, spec.ServeFlags %v", got, spec.ServeFlags)
	}
}

// An exec block giving its plugin a flag twice with two values, which `volctl plugin serve`
// refuses (the agent cannot be serving the plugin so), is refused before anything is written,
// naming the plugin, the flag and both values. Before, the last value was written into the
// plugin job (and in round 59 the first). Found by helper review61.
func TestExportNomadRefusesAFlagServeRefuses(t *testing.T) {
	for _, more := range [][]string{{"--max-volumes", "2", "--max-volumes=5"}, {"--root", "/srv/a"}, {"--enable-attach", "--enable-attach=false"}} {
		t.Run(strings.Join(more, " "), func(t *testing.T) {
			h := newCLIHarness(t)
			args := append([]string{"plugin", "serve", "hostpath", "--root", "/srv/hp", "--node-id", "edge-7"}, more...)
			hostpathVolumeToExport(t, h, hostpath.Config{}, &spec.Exec{Command: "/usr/local/bin/volctl", Args: args})
			var out string
			_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
				o.Volumes, o.Plugin.VolctlPath, out = []string{"hv"}, "/usr/local/bin/volctl", o.OutDir
			})
			if err == nil {
				t.Fatalf("exported a plugin job from exec args %q, which serve refuses", args)
			}
			checkHolds(t, "the refusal", err.Error(), []string{`plugin "hp"`, more[0] + " twice", "--no-plugin-job"}, nil)
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("refused, yet %s was made", out)
			}
		})
	}
}

// A relative plugin root is refused before anything is written: given as --plugin-root, or
// read from the exec block's --root (which the agent reads from its own working directory,
// recorded nowhere). Written into the plugin job's args, Nomad's plugin read it from its
// task's working directory and served an empty root there: every volume handed over was
// NOT_FOUND to it. Before, both were written as they were. An absolute --plugin-root still
// exports the exec block's plugin.
func TestExportNomadRefusesARelativePluginRoot(t *testing.T) {
	for _, tc := range []struct {
		name       string
		execRoot   string
		pluginRoot string
		want       []string
	}{
		{"--plugin-root", "/srv/hp", "data/hp", []string{`--plugin-root "data/hp" is not an absolute path`}},
		{"the exec block's --root", "data/hp", "", []string{`plugin "hp": its exec block's --root "data/hp" is a relative path`, "--plugin-root"}},
		{"the exec block's --root=", "./hp", "", []string{`its exec block's --root "./hp" is a relative path`}},
		{"the exec block's, with --plugin-root", "data/hp", "/srv/hp", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCLIHarness(t)
			args := []string{"plugin", "serve", "hostpath", "--root", tc.execRoot, "--node-id", "edge-7"}
			if strings.HasSuffix(tc.name, "=") {
				args = []string{"plugin", "serve", "hostpath", "--root=" + tc.execRoot, "--node-id", "edge-7"}
			}
			hostpathVolumeToExport(t, h, hostpath.Config{}, &spec.Exec{Command: "/usr/local/bin/volctl", Args: args})
			var out string
			_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
				o.Volumes, o.Plugin.VolctlPath, o.Plugin.Root, out = []string{"hv"}, "/usr/local/bin/volctl", tc.pluginRoot, o.OutDir
			})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("export with an absolute --plugin-root: %v\n%s", err, stderr)
				}
				job, _ := os.ReadFile(filepath.Join(out, "plugin-hp.nomad.hcl"))
				if !strings.Contains(string(job), `"--root", "/srv/hp"`) {
					t.Errorf("the plugin job does not serve --plugin-root:\n%s", job)
				}
				return
			}
			if err == nil {
				t.Fatalf("exported a plugin job with a relative root")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal does not say %q:\n%v", w, err)
				}
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("refused, yet %s was made", out)
			}
		})
	}
}

// --volctl-path, the plugin task's command, is refused as a relative path (Nomad reads it from
// the task's working directory, where no volctl is); an absolute path and a name alone (looked
// up in the clients' PATH) are written. Before, "bin/volctl" was written, and Nomad's plugin
// never started.
func TestExportNomadRefusesARelativeVolctlPath(t *testing.T) {
	for path, refused := range map[string]bool{"bin/volctl": true, "./volctl": true, "/usr/local/bin/volctl": false, "volctl": false} {
		t.Run(path, func(t *testing.T) {
			h := newCLIHarness(t)
			hostpathVolumeToExport(t, h, hostpath.Config{}, nil)
			var out string
			_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
				o.Volumes, o.Plugin.VolctlPath, o.Plugin.Root, out = []string{"hv"}, path, "/srv/hp", o.OutDir
			})
			if !refused {
				if err != nil {
					t.Fatalf("--volctl-path %q: %v", path, err)
				}
				job, _ := os.ReadFile(filepath.Join(out, "plugin-hp.nomad.hcl"))
				if !strings.Contains(string(job), `command = "`+path+`"`) {
					t.Errorf("the plugin job does not run %q:\n%s", path, job)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), `--volctl-path "`+path+`" is a relative path`) || ExitCode(err) != ExitUsage {
				t.Fatalf("--volctl-path %q: %v (exit %d), want it refused as relative, exit %d", path, err, ExitCode(err), ExitUsage)
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("refused, yet %s was made", out)
			}
		})
	}
}
