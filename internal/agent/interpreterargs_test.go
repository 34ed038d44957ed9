package agent

// review31a's findings on security31's interpreter-argument check (programargs.go), each
// a start that ran code another user may change, or refused a legitimate one.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

func argsLook(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("no %s here: %v", name, err)
	}
	return p
}

func argsWrite(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// argsStartEnv starts command with args and env as a plugin; err is startProcess's.
func argsStartEnv(t *testing.T, env map[string]string, command string, args ...string) error {
	t.Helper()
	run := t.TempDir()
	p, err := startProcess(spec.Plugin{ID: "p", Socket: filepath.Join(run, "p.sock"), Exec: &spec.Exec{Command: command, Args: args, Env: env}}, run, run)
	if err == nil && !p.wait(30e9) {
		t.Fatal("the plugin did not exit")
	}
	return err
}

// argsDirs are a directory root's alone (safe) and one any user may write (open).
func argsDirs(t *testing.T) (safe, open string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the files must be root's")
	}
	b := baseDir(t)
	return mkdir(t, filepath.Join(b, "safe"), 0o755), mkdir(t, filepath.Join(b, "open"), 0o777)
}

// sh, bash and dash read a lone "-" as the end of their options, as "--": the next argument is
// the script. Before, the reader took it as stdin and checked no script.
func TestShellsLoneDashEndsOptionsTheScriptFollows(t *testing.T) {
	_, open := argsDirs(t)
	s := writeScript(t, filepath.Join(open, "run.sh"), "sh")
	argsEvidence(t, s)
	checkArgsStart(t, argsLook(t, "sh"), []string{"-", s}, s, open, "the script its args name")
}

// node's -C takes a value (a condition) in the next argument. Before, the reader took that value
// as the script, and the real script any user may write ran unchecked.
func TestNodeConditionsValueIsNotTheScript(t *testing.T) {
	safe, open := argsDirs(t)
	_ = safe
	s := argsWrite(t, filepath.Join(open, "evil.js"), "require('fs').writeFileSync(__filename + '.ran', '')\n")
	argsEvidence(t, s)
	checkArgsStart(t, argsLook(t, "node"), []string{"-C", "/usr", s}, s, open, "the script its args name")
}

func TestNodeLongConditionsValueIsNotTheScript(t *testing.T) {
	_, open := argsDirs(t)
	s := argsWrite(t, filepath.Join(open, "evil.js"), "require('fs').writeFileSync(__filename + '.ran', '')\n")
	checkArgsStart(t, argsLook(t, "node"), []string{"--conditions", "/usr", s}, s, open, "the script its args name")
}

// A legitimate node -C condition (a plain word) is no relative script: before, it was refused as one.
func TestNodeConditionWordIsNotARelativeScript(t *testing.T) {
	safe, _ := argsDirs(t)
	s := argsWrite(t, filepath.Join(safe, "ok.js"), "require('fs').writeFileSync(__filename + '.ran', '')\n")
	checkArgsStart(t, argsLook(t, "node"), []string{"-C", "development", s}, s, "")
}

// perl -Mlib=DIR puts DIR first in @INC: a root script's `use strict` then loads the strict.pm
// another user wrote there. Before, PERL5OPT's -Mlib= was refused, the command line's not read.
func TestPerlMlibOnTheCommandLineIsChecked(t *testing.T) {
	safe, open := argsDirs(t)
	s := argsWrite(t, filepath.Join(safe, "plugin.pl"), "use Getopt::Long;\n")
	g := mkdir(t, filepath.Join(open, "Getopt"), 0o777)
	marker := filepath.Join(g, "Long")
	argsWrite(t, filepath.Join(g, "Long.pm"), "package Getopt::Long; open(my $f, '>', '"+marker+".ran'); close $f; sub import {} 1;\n")
	argsEvidence(t, marker)
	checkArgsStart(t, argsLook(t, "perl"), []string{"-Mlib=" + open, s}, marker, open)
}

// env -C DIR runs python in DIR: python -m imports from it first. Before, the check used the
// agent's working directory, not the one env gives.
func TestEnvChdirIsTheWorkingDirectoryOfWhatItRuns(t *testing.T) {
	_, open := argsDirs(t)
	marker := filepath.Join(open, "vtevil")
	argsWrite(t, filepath.Join(open, "vtevil.py"), "open('"+marker+".ran', 'w').close()\n")
	argsLook(t, "python3")
	argsEvidence(t, marker)
	checkArgsStart(t, argsLook(t, "env"), []string{"-C", open, "python3", "-m", "vtevil"}, marker, open)
}

// python -E ignores PYTHONSAFEPATH: with the agent in a directory any user may write,
// python -E -m imports from it first; before, the check took PYTHONSAFEPATH as leaving it out.
func TestPythonEIgnoresPYTHONSAFEPATH(t *testing.T) {
	_, open := argsDirs(t)
	marker := filepath.Join(open, "vtevil2")
	argsWrite(t, filepath.Join(open, "vtevil2.py"), "open('"+marker+".ran', 'w').close()\n")
	py := argsLook(t, "python3")
	t.Chdir(open)
	err := argsStartEnv(t, map[string]string{"PYTHONSAFEPATH": "1"}, py, "-E", "-m", "vtevil2")
	if err == nil || ranBeside(marker) {
		t.Fatalf("python3 -E -m vtevil2 with PYTHONSAFEPATH=1 in %s: err = %v, ran = %v; want refused, not run", open, err, ranBeside(marker))
	}
}

// node -r NAME resolves NAME from the working directory's node_modules (the agent's, which the
// plugin inherits), not NODE_PATH's only: each node_modules on the way up is checked.
func TestNodeRequireOfANameIsLookedUpInTheWorkingDirsNodeModules(t *testing.T) {
	safe, open := argsDirs(t)
	nm := mkdir(t, filepath.Join(open, "node_modules"), 0o777)
	marker := filepath.Join(nm, "vtevil")
	argsWrite(t, filepath.Join(nm, "vtevil.js"), "require('fs').writeFileSync('"+marker+".ran', '')\n")
	s := argsWrite(t, filepath.Join(safe, "ok.js"), "\n")
	node := argsLook(t, "node")
	t.Chdir(open)
	err := startArgs(t, node, "-r", "vtevil", s)
	if err == nil || ranBeside(marker) {
		t.Fatalf("node -r vtevil %s in %s: err = %v, ran = %v; want refused, not run", s, open, err, ranBeside(marker))
	}
}

// Debian's perl5.36-x86_64-linux-gnu is perl: before, a name the pattern did not know.
func TestDebiansVersionedPerlIsReadAsPerl(t *testing.T) {
	_, open := argsDirs(t)
	p := "/usr/bin/perl5.36-x86_64-linux-gnu"
	if _, err := os.Stat(p); err != nil {
		t.Skip(err)
	}
	s := writeScript(t, filepath.Join(open, "evil.pl"), "perl")
	argsEvidence(t, s)
	checkArgsStart(t, p, []string{s}, s, open, "the script its args name")
}

// ruby -r with a path loads that file (before, the reader took -r's value as a value, not a
// path); ruby -i[ext] takes the rest of its group, so -iC does not consume the next argument. Checked with untrustedArgs directly: no ruby here.
func TestRubyRequireOfAPathAndInplaceSuffix(t *testing.T) {
	safe, open := argsDirs(t)
	ruby := argsWrite(t, filepath.Join(safe, "ruby"), "")
	ok := argsWrite(t, filepath.Join(safe, "ok.rb"), "")
	evil := argsWrite(t, filepath.Join(open, "evil.rb"), "")
	for _, args := range [][]string{{"-r" + evil, ok}, {"-r", evil, ok}, {"-iC", evil}} {
		if err := untrustedArgs("ruby", ruby, args, nil, ""); err == nil {
			t.Errorf("untrustedArgs(ruby %q) = nil; want refused: ruby loads %s, which any user may write", args, evil)
		}
	}
}

// Legitimate starts through the reader: none is refused.
func TestInterpreterArgsLegitimateStartsRun(t *testing.T) {
	safe, _ := argsDirs(t)
	py := argsLook(t, "python3")
	s := writeScript(t, filepath.Join(safe, "ok.py"), "python3")
	checkArgsStart(t, argsLook(t, "env"), []string{"-i", "PATH=/usr/bin:/bin", "python3", s}, s, "")
	s2 := writeScript(t, filepath.Join(safe, "ok2.py"), "python3")
	checkArgsStart(t, "/usr/bin/python3.11", []string{"-X", "importtime", s2}, s2, "")
	s3 := filepath.Join(safe, "shebang.py")
	if err := os.WriteFile(s3, []byte("#!/usr/bin/env python3\nopen(__file__ + '.ran', 'w').close()\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	checkArgsStart(t, s3, nil, s3, "")
	s4 := writeScript(t, filepath.Join(safe, "ok.pl"), "perl")
	checkArgsStart(t, "/usr/bin/perl5.36.0", []string{s4}, s4, "")
	s5 := filepath.Join(safe, "x")
	checkArgsStart(t, argsLook(t, "sh"), []string{"-c", "exec /usr/bin/touch " + s5 + ".ran"}, s5, "")
	s6 := writeScript(t, filepath.Join(safe, "run.sh"), "sh")
	checkArgsStart(t, argsLook(t, "bash"), []string{s6}, s6, "")
	if err := startArgs(t, py, "-m", "json.tool", "--help"); err != nil {
		t.Errorf("python3 -m json.tool refused: %v", err)
	}
}

// env's options grouped (-iS, -vS) are getopt's: before, the reader skipped the whole group, so
// -S's words were never read, and env was taken to run nothing.
func TestEnvGroupedSplitStringIsRead(t *testing.T) {
	_, open := argsDirs(t)
	s := writeScript(t, filepath.Join(open, "evil.py"), "python3")
	argsLook(t, "python3")
	argsEvidence(t, s)
	checkArgsStart(t, argsLook(t, "env"), []string{"-iS", "/usr/bin/python3 " + s}, s, open)
}

// argsEvidence logs whether marker's .ran appeared: that the refused-by-want code really ran.
func argsEvidence(t *testing.T, marker string) {
	t.Cleanup(func() { t.Logf("evidence: %s.ran exists = %v", marker, ranBeside(marker)) })
}

// sh -i is interactive: it runs $ENV first (dash, bash as sh). Before, ENV was left out as "only
// an interactive shell reads it", and -i not read (startupFiles).
func TestInteractiveShellsENVIsChecked(t *testing.T) {
	safe, open := argsDirs(t)
	evil := argsWrite(t, filepath.Join(open, "env.sh"), "touch \""+filepath.Join(open, "env")+".ran\"\n")
	ok := writeScript(t, filepath.Join(safe, "ok.sh"), "sh")
	err := argsStartEnv(t, map[string]string{"ENV": evil}, argsLook(t, "sh"), "-i", ok)
	if err == nil || ranBeside(filepath.Join(open, "env")) {
		t.Fatalf("sh -i %s with ENV=%s: err = %v, ENV's script ran = %v; want refused, not run", ok, evil, err, ranBeside(filepath.Join(open, "env")))
	}
}

// node --env-file=FILE (node 20.6+) reads variables from FILE before it starts, NODE_OPTIONS
// among them: a file another user may write has node --require their code. Before, neither
// the file nor what it sets was checked.
func TestNodeEnvFileIsChecked(t *testing.T) {
	safe, open := argsDirs(t)
	marker := filepath.Join(open, "evil")
	evil := argsWrite(t, filepath.Join(open, "evil.js"), "require('fs').writeFileSync('"+marker+".ran', '')\n")
	envFile := argsWrite(t, filepath.Join(open, "plugin.env"), "NODE_OPTIONS=--require "+evil+"\n")
	s := argsWrite(t, filepath.Join(safe, "ok.js"), "require('fs').writeFileSync(__filename + '.ran', '')\n")
	argsEvidence(t, marker)
	checkArgsStart(t, argsLook(t, "node"), []string{"--env-file=" + envFile, s}, marker, open)
}

// bash -l (a login shell, script or not) runs ~/.bash_profile first: HOME set in the exec env
// to a directory another user may write has their profile run as root. Before, HOME was not
// checked and -l/--login not read.
func TestLoginShellsHOMEProfileIsChecked(t *testing.T) {
	safe, open := argsDirs(t)
	marker := filepath.Join(open, "profile")
	argsWrite(t, filepath.Join(open, ".bash_profile"), "touch \""+marker+".ran\"\n")
	ok := writeScript(t, filepath.Join(safe, "ok.sh"), "sh")
	err := argsStartEnv(t, map[string]string{"HOME": open}, argsLook(t, "bash"), "-l", ok)
	if err == nil || ranBeside(marker) {
		t.Fatalf("bash -l %s with HOME=%s: err = %v, its .bash_profile ran = %v; want refused, not run", ok, open, err, ranBeside(marker))
	}
}

// node --import file:///PATH (or -r file://...) loads that file: before, the reader took it as
// a bare module's name and skipped it.
func TestNodeImportOfAFileURLIsChecked(t *testing.T) {
	safe, open := argsDirs(t)
	marker := filepath.Join(open, "evil")
	evil := argsWrite(t, filepath.Join(open, "evil.mjs"), "import fs from 'fs'; fs.writeFileSync('"+marker+".ran', '')\n")
	s := argsWrite(t, filepath.Join(safe, "ok.js"), "\n")
	argsEvidence(t, marker)
	checkArgsStart(t, argsLook(t, "node"), []string{"--import", "file://" + evil, s}, marker, open)
}

// python3 -i (no script) is interactive whatever stdin is: it runs PYTHONSTARTUP first.
// Before, PYTHONSTARTUP was left out as "only an interactive Python's", and -i not read.
func TestInteractivePythonsPYTHONSTARTUPIsChecked(t *testing.T) {
	_, open := argsDirs(t)
	marker := filepath.Join(open, "startup")
	evil := argsWrite(t, filepath.Join(open, "startup.py"), "open('"+marker+".ran', 'w').close()\n")
	err := argsStartEnv(t, map[string]string{"PYTHONSTARTUP": evil}, argsLook(t, "python3"), "-i")
	if err == nil || ranBeside(marker) {
		t.Fatalf("python3 -i with PYTHONSTARTUP=%s: err = %v, it ran = %v; want refused, not run", evil, err, ranBeside(marker))
	}
}

// A relative script, the agent run in a directory only root may write (systemd's
// WorkingDirectory=/opt/csi, or `cd /opt/csi && volctl agent`), is that directory's file, root's:
// it ran before security31, which refused it outright; a relative command is taken so (a warning).
// Resolved against the working directory now; refused only where that is not known (register).
func TestAgentRunsARelativeScriptFromARootWorkingDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip(err)
	}
	b := baseDir(t)
	safe := mkdir(t, filepath.Join(b, "safe"), 0o755)
	if err := os.WriteFile(filepath.Join(safe, "plugin.py"), []byte("open(__file__ + '.ran', 'w').close()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(safe)
	run := t.TempDir()
	p, err := startProcess(spec.Plugin{ID: "p", Socket: filepath.Join(run, "p.sock"), Exec: &spec.Exec{Command: py, Args: []string{"plugin.py"}}}, run, run)
	if err == nil && !p.wait(30*time.Second) {
		t.Fatal("the plugin did not exit")
	}
	if err != nil {
		t.Fatalf("python3 plugin.py in %s (root's, 0755): %v; want it run", safe, err)
	}
	if !ranBeside(filepath.Join(safe, "plugin.py")) {
		t.Error("plugin.py did not run")
	}
}

// Where the working directory is not known (`plugin register`'s warning, made in the
// command's own), a relative script, and a node module by name, cannot be told: still
// refused (warned) there. Known, they are its files: checked there.
func TestRelativeArgsWithoutAWorkingDirectoryAreRefused(t *testing.T) {
	safe, open := argsDirs(t)
	sh := argsLook(t, "sh")
	node := argsWrite(t, filepath.Join(safe, "node"), "")
	argsWrite(t, filepath.Join(safe, "run.sh"), "") // the scripts run are there: one that is not is refused
	x := argsWrite(t, filepath.Join(safe, "x.js"), "")
	for _, tt := range []struct {
		path string
		args []string
		wd   string
		bad  string // "" for none
	}{
		{sh, []string{"run.sh"}, "", "run.sh"},
		{sh, []string{"run.sh"}, safe, ""},
		{sh, []string{"run.sh"}, open, filepath.Join(open, "run.sh")},
		{node, []string{"-r", "hook", x}, "", "hook"},
		{node, []string{"-r", "hook", x}, "/", ""},
		{node, []string{"-r", "hook", x}, safe, "node_modules"}, // /tmp/node_modules, any user's to make
		{node, []string{"-r", "node:fs", x}, "", ""},
		{node, []string{"-r", "./hook.js", x}, open, filepath.Join(open, "hook.js")},
		{node, []string{"-r", "file:hook.js", x}, open, filepath.Join(open, "hook.js")},
	} {
		checkUntrustedArgs(t, tt.path, tt.args, nil, tt.wd, tt.bad)
	}
}

// node's long options may take their value in the next argument: one the agent does not list,
// without "=", leaves which argument is the script unknown: both readings are checked, and a
// script another user controls in either is refused, saying how to write the option; with "=",
// or with "--" next, or a listed flag, it is read.
func TestNodeUnknownLongOptionWithoutValueIsRefused(t *testing.T) {
	safe, open := argsDirs(t)
	node := argsWrite(t, filepath.Join(safe, "node"), "")
	evil := argsWrite(t, filepath.Join(open, "evil.js"), "")
	ok := argsWrite(t, filepath.Join(safe, "ok.js"), "")
	err := untrustedArgs("node", node, []string{"--some-new-option", "x", evil}, nil, safe)
	if err == nil || !strings.Contains(err.Error(), "--some-new-option") || !strings.Contains(err.Error(), "--some-new-option=VALUE") {
		t.Errorf("node --some-new-option x %s: %v; want it refused, naming the option and how to give its value", evil, err)
	}
	for _, args := range [][]string{
		{"--some-new-option=x", ok}, {"--some-new-option", "--", ok}, {"--enable-source-maps", "--no-warnings", ok},
		{"--max-old-space-size=512", ok}, {"--dns-result-order=ipv4first", ok},
		{"--some-new-option", "x", ok}, {"--trace-gc", ok},
	} {
		if err := untrustedArgs("node", node, args, nil, safe); err != nil {
			t.Errorf("node %q: %v; want it run", args, err)
		}
	}
	// V8's options take their value only after "=": node refuses `--max-old-space-size 512`
	// ("illegal value for flag"), and the agent reads 512 as the script, which is not there.
	if err := untrustedArgs("node", node, []string{"--max-old-space-size", "512", ok}, nil, safe); err == nil || !strings.Contains(err.Error(), "512") {
		t.Errorf("node --max-old-space-size 512 %s: %v; want it refused, naming 512 as the script that is not there", ok, err)
	}
	if err := untrustedArgs("node", node, []string{"--some-new-option=x", evil}, nil, safe); err == nil {
		t.Errorf("node --some-new-option=x %s: nil; want the script refused", evil)
	}
}

// ENV is an application's setting as often as a shell's startup file (ENV=production), and a
// POSIX shell reads it only when interactive: it is checked with -i only.
// zsh reads ZDOTDIR's (or HOME's) .zshenv before any script. python -E ignores PYTHONSTARTUP.
func TestStartupFilesAreCheckedOnlyWhereRead(t *testing.T) {
	safe, open := argsDirs(t)
	sh := argsLook(t, "sh")
	zsh := argsWrite(t, filepath.Join(safe, "zsh"), "")
	py := argsWrite(t, filepath.Join(safe, "python3"), "")
	ok := argsWrite(t, filepath.Join(safe, "ok.sh"), "")
	for _, tt := range []struct {
		path string
		args []string
		env  []string
		bad  string
	}{
		{sh, []string{ok}, []string{"ENV=production"}, ""},
		{sh, []string{"-i", ok}, []string{"ENV=production"}, ""},             // the working directory's, root's
		{sh, []string{ok}, []string{"ENV=" + filepath.Join(open, "rc")}, ""}, // not interactive: not read
		{sh, []string{"-i", ok}, []string{"ENV=" + filepath.Join(open, "rc")}, open},
		{sh, []string{"-i", ok}, []string{"ENV=$HOME/rc"}, "expands"},
		{sh, []string{ok}, []string{"HOME=" + open}, ""},
		{sh, []string{"--login", ok}, []string{"HOME=" + open}, open},
		{zsh, []string{ok}, []string{"HOME=" + open}, open},
		{zsh, []string{ok}, []string{"HOME=" + open, "ZDOTDIR=" + safe}, ""},
		{py, []string{"-i"}, []string{"PYTHONSTARTUP=" + filepath.Join(open, "s.py")}, open},
		{py, []string{"-E", "-i"}, []string{"PYTHONSTARTUP=" + filepath.Join(open, "s.py")}, ""},
	} {
		checkUntrustedArgs(t, tt.path, tt.args, tt.env, safe, tt.bad)
	}
}

// The names read as interpreters are interpreters' patterns exactly (docs/agent.md): Debian's
// versioned perl, pypy, a debug python are; python3-config, busybox and a renamed copy are not.
func TestInterpreterNamesAreTheDocumentedPatterns(t *testing.T) {
	dir := t.TempDir()
	for name, want := range map[string]*interpreter{
		"perl5.36-x86_64-linux-gnu": &perl, "perl5.36.0": &perl, "pypy3": &python, "python3-dbg": &python,
		"python3.11d": &python, "python3.12": &python, "zsh": &zsh, "rbash": &shell, "nodejs": &node,
		"python3-config": nil, "busybox": nil, "myperl": nil, "perlbug": nil,
	} {
		p := argsWrite(t, filepath.Join(dir, name), "")
		if got := interpreterOf(p); got != want {
			t.Errorf("interpreterOf(%s) = %v; want %v", name, got, want)
		}
	}
}

// env(1)'s -u takes a variable out of what it runs with, -i all of them (PATH then execvp's
// default): an LD_PRELOAD unset is not held against the program; one set after -i is.
func TestEnvUnsetAndIgnoreEnvironment(t *testing.T) {
	safe, open := argsDirs(t)
	env := argsLook(t, "env")
	ok := writeScript(t, filepath.Join(safe, "ok.sh"), "sh")
	bad := []string{"LD_PRELOAD=" + filepath.Join(open, "hook.so")}
	for _, tt := range []struct {
		args []string
		bad  string
	}{
		{[]string{"-u", "LD_PRELOAD", "sh", ok}, ""},
		{[]string{"-uLD_PRELOAD", "sh", ok}, ""},
		{[]string{"--unset=LD_PRELOAD", "sh", ok}, ""},
		{[]string{"-i", "sh", ok}, ""},
		{[]string{"sh", ok}, open},
		{[]string{"-i", "LD_PRELOAD=" + filepath.Join(open, "x.so"), "sh", ok}, open},
	} {
		checkUntrustedArgs(t, env, tt.args, bad, safe, tt.bad)
	}
}

// Inline code ends python's options (-c, -m: what follows is the code's argv), but not perl's,
// ruby's or node's, whose -e takes the code as its value with more options after it, nor a
// shell's, whose -c is a flag, the code the first argument no option takes: what those later
// options load is checked. Before, the reader stopped at the first -e or -c.
func TestOptionsAfterInlineCodeAreRead(t *testing.T) {
	safe, open := argsDirs(t)
	fake := func(name string) string { return argsWrite(t, filepath.Join(safe, name), "") }
	perl, ruby, node, py := fake("perl"), fake("ruby"), fake("node"), fake("python3")
	sh := argsLook(t, "sh")
	evil := filepath.Join(open, "evil")
	for _, tt := range []struct {
		path string
		args []string
		env  []string
		bad  string
	}{
		{perl, []string{"-e", "use Foo", "-Mlib=" + open}, nil, open},
		{perl, []string{"-we", "use Foo", "-I", open}, nil, open},
		{ruby, []string{"-e", "require 'x'", "-I", open}, nil, open},
		{node, []string{"-e", "1", "-r", evil}, nil, open},
		{node, []string{"--eval", "1", "--require=" + evil}, nil, open},
		{sh, []string{"-c", "-l", "true"}, []string{"HOME=" + open}, open},
		{sh, []string{"-c", "true", "-l"}, []string{"HOME=" + open}, ""}, // -l is $0 there
		{perl, []string{"-e", "1", evil}, nil, ""},                       // an argument of the code
		{py, []string{"-c", "1", "-X", evil}, nil, ""},                   // the code's argv
	} {
		checkUntrustedArgs(t, tt.path, tt.args, tt.env, "/", tt.bad)
	}
}

// checkUntrustedArgs checks untrustedArgs of the program at path run with args and env in wd:
// with bad "", that it passes; else that it refuses, naming bad.
func checkUntrustedArgs(t *testing.T, path string, args, env []string, wd, bad string) {
	t.Helper()
	err := untrustedArgs("cmd", path, args, env, wd)
	switch {
	case bad == "" && err != nil:
		t.Errorf("%s %q with %q in %q: %v; want it run", filepath.Base(path), args, env, wd, err)
	case bad != "" && (err == nil || !strings.Contains(err.Error(), bad)):
		t.Errorf("%s %q with %q in %q: %v; want it refused, naming %s", filepath.Base(path), args, env, wd, err, bad)
	}
}
