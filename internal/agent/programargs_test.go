package agent

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// startArgs starts command with args as plugin p's exec block and waits for it to exit; err is
// startProcess's.
func startArgs(t *testing.T, command string, args ...string) error {
	t.Helper()
	run := t.TempDir()
	p, err := startProcess(spec.Plugin{ID: "p", Socket: filepath.Join(run, "p.sock"), Exec: &spec.Exec{Command: command, Args: args}}, run, run)
	if err == nil && !p.wait(30*time.Second) {
		t.Fatal("the plugin did not exit")
	}
	return err
}

// checkArgsStart starts command with args as a plugin and checks the outcome: with bad "", that
// it ran (the script it was given marks its run); else, that it was refused with an error that
// says "not run", bad (the path another user controls) and each of wants, and that the script,
// if any, did not run.
func checkArgsStart(t *testing.T, command string, args []string, script, bad string, wants ...string) {
	t.Helper()
	err := startArgs(t, command, args...)
	if bad == "" {
		if err != nil {
			t.Fatalf("the agent refused %s %q: %v; want it run", command, args, err)
		}
		if !ranBeside(script) {
			t.Errorf("%s %q did not run", command, args)
		}
		return
	}
	if err == nil {
		t.Fatalf("the agent ran %s %q as uid %d, which runs code where another user may change it (%s); want it refused", command, args, os.Geteuid(), bad)
	}
	for _, want := range append([]string{"not run", bad}, wants...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %q", err, want)
		}
	}
	if script != "" && ranBeside(script) {
		t.Error("the script ran")
	}
}

// writeScript writes a script at path that leaves path.ran when it runs, in the language of
// the interpreter named (sh, python3, perl).
func writeScript(t *testing.T, path, lang string) string {
	t.Helper()
	body := map[string]string{
		"sh":      "touch \"$0.ran\"\n",
		"python3": "open(__file__ + '.ran', 'w').close()\n",
		"perl":    "open(my $f, '>', \"$0.ran\"); close $f;\n",
	}[lang]
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// An exec block that runs its plugin through an interpreter, the plugin's code named in its
// args (python3 /opt/csi/plugin.py, sh /opt/csi/run.sh, perl -I DIR, the dynamic loader run as
// a program), runs that code as the agent's user, root. Before, only the command (the
// interpreter) was held to the program rule: a script in a directory any user may write ran as
// root, where the same file named as the command was refused. Now the script, and what the
// interpreter's options load code from, are held to it, the refusal naming the path; code
// given inline (sh -c, python3 -c) and a script only root may change run as before.
func TestAgentRunsNoScriptItsInterpretersArgsNameThatAnotherUserMayChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the system's interpreters are root's: as another user, each is refused as the command")
	}
	b := baseDir(t)
	safe, open := mkdir(t, filepath.Join(b, "safe"), 0o755), mkdir(t, filepath.Join(b, "open"), 0o777)
	lookup := func(t *testing.T, name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("no %s here: %v", name, err)
		}
		return p
	}
	for _, tt := range []struct {
		name, lang string
		args       func(t *testing.T) (args []string, script, bad, what string) // bad: the path named, "" for a start
	}{
		{"sh with a script any user may change", "sh", func(t *testing.T) ([]string, string, string, string) {
			s := writeScript(t, filepath.Join(open, "run.sh"), "sh")
			return []string{s}, s, open, "the script its args name"
		}},
		{"sh -e -- with a script any user may change", "sh", func(t *testing.T) ([]string, string, string, string) {
			s := writeScript(t, filepath.Join(open, "run2.sh"), "sh")
			return []string{"-e", "-o", "nounset", "--", s}, s, open, "the script its args name"
		}},
		{"sh with a script not made yet where any user may make it", "sh", func(t *testing.T) ([]string, string, string, string) {
			return []string{filepath.Join(open, "later.sh")}, "", open, "the script its args name"
		}},
		{"python3 -u with a script any user may change", "python3", func(t *testing.T) ([]string, string, string, string) {
			s := writeScript(t, filepath.Join(open, "plugin.py"), "python3")
			return []string{"-u", "-W", "ignore", s}, s, open, "the script its args name"
		}},
		{"perl -I a directory any user may write", "perl", func(t *testing.T) ([]string, string, string, string) {
			s := writeScript(t, filepath.Join(safe, "plugin.pl"), "perl")
			return []string{"-I", open, s}, s, open, "option -I"
		}},
		{"sh with a relative script, the agent in a directory any user may write", "sh", func(t *testing.T) ([]string, string, string, string) {
			t.Chdir(open) // the plugin's working directory: run.sh is open's, made or not
			return []string{"run.sh"}, "", filepath.Join(open, "run.sh"), "the script its args name"
		}},
		{"sh with a script only root may change", "sh", func(t *testing.T) ([]string, string, string, string) {
			s := writeScript(t, filepath.Join(safe, "ok.sh"), "sh")
			return []string{"-e", s, filepath.Join(open, "an-argument-of-the-script")}, s, "", ""
		}},
		{"sh -c with code inline", "sh", func(t *testing.T) ([]string, string, string, string) {
			s := filepath.Join(safe, "inline")
			return []string{"-c", "touch \"$1.ran\"", "sh", s}, s, "", ""
		}},
		{"python3 with a script only root may change", "python3", func(t *testing.T) ([]string, string, string, string) {
			s := writeScript(t, filepath.Join(safe, "ok.py"), "python3")
			return []string{s}, s, "", ""
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			command := lookup(t, tt.lang)
			args, script, bad, what := tt.args(t)
			checkArgsStart(t, command, args, script, bad, "command "+command, what)
		})
	}

	// The dynamic loader run as a program runs the ELF program its args name, with the
	// directories --library-path names searched first.
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh to read the dynamic loader of: %v", err)
	}
	f, err := elf.Open(sh)
	if err != nil {
		t.Skipf("%s is no ELF program to find the dynamic loader of: %v", sh, err)
	}
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				interp = strings.TrimRight(string(b), "\x00")
			}
		}
	}
	f.Close()
	if interp == "" {
		t.Skipf("%s has no dynamic loader", sh)
	}
	copyProgram := func(t *testing.T, dir string) string {
		b, err := os.ReadFile(sh)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "sh-copy")
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inOpen, inSafe := copyProgram(t, open), copyProgram(t, safe)
	for _, tt := range []struct {
		name      string
		args      []string
		bad, what string
	}{
		{"the dynamic loader running a program any user may change", []string{inOpen, "-c", "true"}, open, "the program its args name"},
		{"the dynamic loader with --library-path a directory any user may write", []string{"--library-path", open, inSafe, "-c", "true"}, open, "--library-path"},
		{"the dynamic loader running a program only root may change", []string{inSafe, "-c", "touch " + filepath.Join(safe, "ld.ran")}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := startArgs(t, interp, tt.args...)
			if tt.bad == "" {
				if err != nil {
					t.Fatalf("the agent refused %s %q: %v; want it run", interp, tt.args, err)
				}
				if _, err := os.Stat(filepath.Join(safe, "ld.ran")); err != nil {
					t.Errorf("%s %q did not run", interp, tt.args)
				}
				return
			}
			if err == nil {
				t.Fatalf("the agent ran %s %q as uid %d, whose code is where another user may change it (%s); want it refused", interp, tt.args, os.Geteuid(), tt.bad)
			}
			for _, want := range []string{"not run", "the dynamic loader", tt.what, tt.bad} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to say %q", err, want)
				}
			}
		})
	}
}

// code reads each interpreter's arguments as it does: the options that end them with inline
// code, those that take a value (grouped or not), and the first argument left, the script.
func TestInterpreterArgsAreReadAsTheInterpreterReadsThem(t *testing.T) {
	for _, tt := range []struct {
		in     *interpreter
		args   []string
		script string
		paths  []argCode
	}{
		{&shell, []string{"-ex", "/s.sh", "arg"}, "/s.sh", nil},
		{&shell, []string{"-eo", "pipefail", "/s.sh"}, "/s.sh", nil},
		{&shell, []string{"+o", "posix", "/s.sh"}, "/s.sh", nil},
		{&shell, []string{"-ec", "echo /s.sh"}, "", nil},
		{&shell, []string{"-s", "/s.sh"}, "", nil},
		{&shell, []string{"--rcfile", "/rc", "/s.sh"}, "/s.sh", []argCode{{what: "--rcfile", path: "/rc"}}},
		{&python, []string{"-uW", "ignore", "/p.py"}, "/p.py", nil},
		{&python, []string{"-Wignore", "-X", "dev", "/p.py"}, "/p.py", nil},
		{&python, []string{"-m", "http.server"}, "", nil},
		{&python, []string{"-", "/p.py"}, "", nil},
		{&perl, []string{"-w", "-I/lib/x", "-Mstrict", "/p.pl"}, "/p.pl", []argCode{{what: "-I", path: "/lib/x"}}},
		{&perl, []string{"-we", "print 1"}, "", nil},
		{&perl, []string{"-x/home/e", "-l012", "/p.pl"}, "/p.pl", nil}, // -x's and -l's values are no options
		{&ruby, []string{"-W0", "-Fe", "/p.rb"}, "/p.rb", nil},
		{&ruby, []string{"-rjson", "-I", "/r", "/p.rb"}, "/p.rb", []argCode{{what: "-I", path: "/r"}}},
		{&node, []string{"--require=/h.js", "--title", "x", "/app.js"}, "/app.js", []argCode{{what: "--require", path: "/h.js"}}},
		{&node, []string{"--eval", "1"}, "", nil},
		{&loader, []string{"--library-path", "/l", "--argv0", "x", "/bin/prog", "-c"}, "/bin/prog", nil},
	} {
		p := tt.in.parse(tt.args)
		paths, script := p.paths, p.script
		for _, m := range p.modules {
			if strings.HasPrefix(m.path, "/") { // a module by its path; -rjson is ruby's library
				paths = append(paths, m)
			}
		}
		if script != tt.script || len(paths) != len(tt.paths) || (len(paths) > 0 && paths[0] != tt.paths[0]) {
			t.Errorf("%s %q: script %q, paths %v; want %q, %v", tt.in.name, tt.args, script, paths, tt.script, tt.paths)
		}
	}
}

// env(1) as the command runs the program its args name, looked up in the PATH it is given,
// with the variables they assign: that program, its own args, and the assignments are checked
// as the plugin's command, args and exec env are. Before, only env itself was: `env vttool` ran
// a program any user may write, found in a PATH directory of root's, and `env
// LD_PRELOAD=/tmp/x/hook.so true` their library, as root.
func TestAgentRunsNoProgramEnvRunsThatAnotherUserMayChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the system's programs are root's: as another user, each is refused as the command")
	}
	envProg, err := exec.LookPath("env")
	if err != nil {
		t.Skipf("no env here: %v", err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh here: %v", err)
	}
	b := baseDir(t)
	safe, open, bin := mkdir(t, filepath.Join(b, "safe"), 0o755), mkdir(t, filepath.Join(b, "open"), 0o777), mkdir(t, filepath.Join(b, "bin"), 0o755)
	shBytes, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(bin, "vttool") // a copy of sh any user may write, in root's directory
	if err := os.WriteFile(tool, shBytes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tool, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		args      func(t *testing.T) ([]string, string) // and the script that marks its run
		bad, what string                                // "" for a start
	}{
		{"a program any user may write, found in root's PATH directory", func(t *testing.T) ([]string, string) {
			return []string{"PATH=" + bin, "vttool", "-c", "true"}, ""
		}, tool, "it is env(1), which runs"},
		{"a program in a directory any user may write, by its path", func(t *testing.T) ([]string, string) {
			return []string{filepath.Join(open, "vttool")}, ""
		}, open, "it is env(1), which runs"},
		{"an LD_PRELOAD in a directory any user may write", func(t *testing.T) ([]string, string) {
			return []string{"-i", "LD_PRELOAD=" + filepath.Join(open, "hook.so"), "true"}, ""
		}, open, "LD_PRELOAD"},
		{"sh with a script any user may change, -S split", func(t *testing.T) ([]string, string) {
			s := writeScript(t, filepath.Join(open, "run.sh"), "sh")
			return []string{"-S", "sh -e " + s}, s
		}, open, "the script its args name"},
		{"env running env running sh with a script any user may change", func(t *testing.T) ([]string, string) {
			s := writeScript(t, filepath.Join(open, "run2.sh"), "sh")
			return []string{"-u", "HOME", "--", "env", "A=1", "sh", s}, s
		}, open, "the script its args name"},
		{"sh with a script only root may change", func(t *testing.T) ([]string, string) {
			s := writeScript(t, filepath.Join(safe, "ok.sh"), "sh")
			return []string{"A=1", "sh", s}, s
		}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args, script := tt.args(t)
			checkArgsStart(t, envProg, args, script, tt.bad, tt.what)
		})
	}
}

// python run with code inline (-c), a module (-m) or code from stdin puts its working directory,
// the agent's, first on its module search path: one another user may write has their module
// imported in the plugin as root. Before, it ran. Now it is refused, naming the directory,
// unless -I or -P (or PYTHONSAFEPATH) leaves it out; a script puts its own directory there
// instead, which the script's check covers.
func TestAgentRunsNoPythonThatImportsFromAWorkingDirectoryAnotherUserMayWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the system's interpreters are root's: as another user, each is refused as the command")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("no python3 here: %v", err)
	}
	b := baseDir(t)
	open, safe := mkdir(t, filepath.Join(b, "open"), 0o777), mkdir(t, filepath.Join(b, "safe"), 0o755)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(open); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(safe, "m")
	code := "open('" + mark + ".ran', 'w').close()"
	for _, tt := range []struct {
		args []string
		bad  string
	}{
		{[]string{"-c", code}, open},
		{[]string{"-u", "-m", "this"}, open},
		{[]string{"-I", "-c", code}, ""},
		{[]string{"-Ic", code}, ""},
	} {
		os.Remove(mark + ".ran")
		err := startArgs(t, py, tt.args...)
		if tt.bad == "" {
			if err != nil {
				t.Errorf("python3 %q: %v; want it run", tt.args, err)
			} else if !ranBeside(mark) {
				t.Errorf("python3 %q did not run", tt.args)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "working directory") || !strings.Contains(err.Error(), tt.bad) {
			t.Errorf("python3 %q run in %s, which any user may write: %v; want it refused, naming it", tt.args, open, err)
		}
	}
	for _, args := range [][]string{{"-c", "x"}, {"-", "a"}, {}, {"-W", "ignore", "-m", "x"}} {
		if !(&python).searchesWorkingDir(args, nil) {
			t.Errorf("python %q: its working directory not seen searched", args)
		}
	}
	for _, args := range [][]string{{"/s.py"}, {"-P", "-c", "x"}, {"-Wignore", "-Ic", "x"}, {"--", "-c"}} {
		if (&python).searchesWorkingDir(args, nil) {
			t.Errorf("python %q: its working directory seen searched", args)
		}
	}
	if (&python).searchesWorkingDir([]string{"-c", "x"}, []string{"PYTHONSAFEPATH=1"}) {
		t.Error("PYTHONSAFEPATH=1 python -c: its working directory seen searched")
	}
}

// A script's #! line runs its interpreter with the line's argument: `#!/usr/bin/env -S
// LD_PRELOAD=/dir/hook.so sh` is env assigning LD_PRELOAD, `#!/usr/bin/perl -I/dir` perl
// searching /dir first. Those are held to the rule as the same words in an exec block are.
// Before, only the interpreter was checked: the script, root's, ran their library or module.
func TestAgentRunsNoScriptWhoseShebangArgsLoadWhatAnotherUserMayChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the system's interpreters are root's: as another user, each is refused as the command")
	}
	b := baseDir(t)
	safe, open := mkdir(t, filepath.Join(b, "safe"), 0o755), mkdir(t, filepath.Join(b, "open"), 0o777)
	envProg, err := exec.LookPath("env")
	if err != nil {
		t.Skipf("no env here: %v", err)
	}
	perl, perlErr := exec.LookPath("perl")
	for i, tt := range []struct {
		line, body string
		bad, what  string
	}{
		{"#!" + envProg + " -S LD_PRELOAD=" + filepath.Join(open, "hook.so") + " sh", "touch \"$0.ran\"\n", open, "LD_PRELOAD"},
		{"#!" + perl + " -I" + open, "open(my $f, '>', \"$0.ran\"); close $f;\n", open, "option -I"},
		{"#!" + envProg + " -S A=1 sh -e", "touch \"$0.ran\"\n", "", ""},
	} {
		t.Run(tt.line, func(t *testing.T) {
			if strings.Contains(tt.line, "perl") && perlErr != nil {
				t.Skipf("no perl here: %v", perlErr)
			}
			script := filepath.Join(safe, fmt.Sprintf("plugin%d", i))
			if err := os.WriteFile(script, []byte(tt.line+"\n"+tt.body), 0o755); err != nil {
				t.Fatal(err)
			}
			checkArgsStart(t, script, nil, script, tt.bad, tt.what, "#! line of "+script)
		})
	}
}
