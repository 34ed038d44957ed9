package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/spec"
)

// An exec block may run a plugin through an interpreter it names as its command, the plugin's
// own code in its args: `command = "python3"`, `args = ["/opt/csi/plugin.py"]`, or `bash
// /opt/csi/run.sh`, or the dynamic loader run as a program (`/lib64/ld-linux-x86-64.so.2
// /opt/csi/plugin`). The program check (untrustedProgram) holds the interpreter to the rule,
// and a script run by its #! line with it; a script named in args was run as root unchecked,
// wherever it was, so that the same file refused as the command ran when named as an argument.
// untrustedArgs holds it, and the code paths the interpreter's options name, to the same rule.

// interpreter is how an interpreter the agent knows reads its arguments: which options end
// them with code given inline or from stdin (no script follows), which take a value, and
// which name a path it loads code from; the first argument that is none of those is the
// script it runs.
type interpreter struct {
	name string // what the refusal calls it: "python", "the dynamic loader"
	// letters are the single-dash options, which may be grouped (-ec, -We): inline ends the
	// arguments (-c, -e), value takes the rest of the group or the next argument as a value,
	// path the same as a path loaded as code.
	inline, value, path string
	// attached are the single-dash options whose value, if any, is the rest of their group
	// only (perl's -x[dir], -l[octal]): the letters after them are not options.
	attached string
	// long are the double-dash options: "inline", "value" or "path" (a value naming code:
	// node's --require), "list" (ld.so's --library-path, a directory list), "preload" (ld.so's
	// --preload and --audit, a list of libraries); one not listed takes no value, or has it
	// after "=".
	long map[string]string
	// loader is the dynamic loader run as a program: its script is an ELF program, checked
	// with what its options add to its loader's environment.
	loader bool
}

var (
	shell  = interpreter{name: "the shell", inline: "cs", value: "oO", long: map[string]string{"--rcfile": "path", "--init-file": "path"}}
	python = interpreter{name: "python", inline: "cm", value: "WXQ", long: map[string]string{"--check-hash-based-pycs": "value"}}
	perl   = interpreter{name: "perl", inline: "eE", value: "Mm", path: "I", attached: "xil0CdDFV"}
	ruby   = interpreter{name: "ruby", inline: "e", value: "CEr", path: "I", attached: "0FKTWx"}
	node   = interpreter{name: "node", inline: "ep", value: "", path: "r", long: map[string]string{
		"--eval": "inline", "--print": "inline", "--require": "path", "--import": "path", "--loader": "path",
		"--experimental-loader": "path", "--input-type": "value", "--title": "value"}}
	loader = interpreter{name: "the dynamic loader", loader: true, long: map[string]string{
		"--library-path": "list", "--preload": "preload", "--audit": "preload", "--argv0": "value",
		"--inhibit-rpath": "value", "--glibc-hwcaps-prepend": "value", "--glibc-hwcaps-mask": "value"}}
)

// interpreters names each by the file name of the program the command is (its symlinks
// resolved, or as named): python3.11, bash, ld-linux-x86-64.so.2.
var interpreters = []struct {
	re *regexp.Regexp
	in *interpreter
}{
	{regexp.MustCompile(`^(sh|bash|dash|ash|ksh|mksh|zsh)$`), &shell},
	{regexp.MustCompile(`^python[0-9.]*$`), &python},
	{regexp.MustCompile(`^perl[0-9.]*$`), &perl},
	{regexp.MustCompile(`^ruby[0-9.]*$`), &ruby},
	{regexp.MustCompile(`^(node|nodejs)$`), &node},
	{regexp.MustCompile(`^(ld-linux.*\.so(\.[0-9]+)*|ld\.so|ld64\.so(\.[0-9]+)*)$`), &loader},
}

// interpreterOf is the interpreter the program at path is, or nil for one the agent does not
// know as one.
func interpreterOf(path string) *interpreter {
	names := []string{filepath.Base(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		names = append(names, filepath.Base(real))
	}
	for _, n := range names {
		for _, i := range interpreters {
			if i.re.MatchString(n) {
				return i.in
			}
		}
	}
	return nil
}

// argCode is a path an interpreter's arguments have it load code from: what names it ("the
// script", "-I", "--preload") and the path.
type argCode struct{ what, path string }

// code is what i loads code from, given args: the paths its options name, and the script, the
// first argument no option takes (nil when an option gives the code inline or from stdin). For
// the dynamic loader, the program is the script, and libraryPath and preload what its options
// add to the loader's environment.
func (i *interpreter) code(args []string) (paths []argCode, script string, libraryPath string, preload []string) {
	for k := 0; k < len(args); k++ {
		a := args[k]
		next := func() string {
			if k+1 < len(args) {
				k++
				return args[k]
			}
			return ""
		}
		switch {
		case a == "--":
			if k+1 < len(args) {
				return paths, args[k+1], libraryPath, preload
			}
			return paths, "", libraryPath, preload
		case a == "-":
			return paths, "", libraryPath, preload // stdin
		case strings.HasPrefix(a, "--"):
			name, v, eq := strings.Cut(a, "=")
			kind := i.long[name]
			if kind == "" {
				continue
			}
			if !eq {
				v = next()
			}
			switch kind {
			case "inline":
				return paths, "", libraryPath, preload
			case "path":
				paths = append(paths, argCode{name, v})
			case "list":
				libraryPath = v
			case "preload":
				preload = append(preload, strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ' ' })...)
			}
		case strings.HasPrefix(a, "-") || (i == &shell && strings.HasPrefix(a, "+")):
			for j := 1; j < len(a); j++ {
				c := a[j]
				rest := a[j+1:]
				switch {
				case strings.IndexByte(i.inline, c) >= 0:
					return paths, "", libraryPath, preload
				case strings.IndexByte(i.attached, c) >= 0:
					j = len(a)
				case strings.IndexByte(i.value, c) >= 0 || strings.IndexByte(i.path, c) >= 0:
					v := rest
					if v == "" {
						v = next()
					}
					if strings.IndexByte(i.path, c) >= 0 {
						paths = append(paths, argCode{"-" + string(c), v})
					}
					j = len(a)
				}
			}
		default:
			return paths, a, libraryPath, preload
		}
	}
	return paths, "", libraryPath, preload
}

// untrustedArgs refuses to run command, found at path, with args and env, when it is an
// interpreter the agent knows (interpreterOf: a shell, python, perl, ruby, node, or the dynamic
// loader run as a program) and the script its args name, or a path its options load code from
// (perl's and ruby's -I, node's --require, a shell's --rcfile), is one another user controls
// (pathtrust.Source: theirs or writable by them, on a way they control, not made yet where they
// may make it, or relative, the plugin's working directory's): their code would run in the
// plugin as the agent's user. The dynamic loader's program is checked as a command is
// (pathtrust.Program), with its --library-path and --preload/--audit. A name that is no path
// (node's --require of a module, ruby's -r of a library) is looked up where the interpreter's own
// environment says: its variables are untrustedEnv's. env(1) is followed to the program it runs
// (untrustedEnvArgs), and a script's #! line read as its interpreter's args. An interpreter the
// agent does not know is run as before: what its arguments mean cannot be told.
//
// wd is the working directory the plugin runs in (the agent's), which python run with -c or -m
// imports from first (interpreter.searchesWorkingDir); "" where it is not known (`plugin
// register`'s warning, made in the command's own): not checked.
func untrustedArgs(command, path string, args, env []string, wd string) error {
	return untrustedArgsAt(command, path, args, env, 0, wd)
}

// maxEnvs bounds the env(1) commands untrustedArgsAt follows, one running another.
const maxEnvs = 4

// untrustedArgsAt is untrustedArgs of a command reached through depth env(1) commands.
func untrustedArgsAt(command, path string, args, env []string, depth int, wd string) error {
	if interp, arg, ok := pathtrust.Shebang(path); ok && depth < maxEnvs {
		// The kernel runs the #! line's interpreter with its argument (one word), the script and
		// args: `#!/usr/bin/env -S LD_PRELOAD=... sh` is env with those words, `#!/usr/bin/perl
		// -I/dir` perl with -I. The interpreter itself is untrustedProgram's.
		iargs := []string{}
		if arg != "" {
			iargs = append(iargs, arg)
		}
		script := path
		if abs, err := filepath.Abs(path); err == nil {
			script = abs // a relative command ("./bin/plugin", taken with a warning) is the working directory's, as the kernel passes it
		}
		iargs = append(append(iargs, script), args...)
		if err := untrustedArgsAt(command, interp, iargs, env, depth+1, wd); err != nil {
			return fmt.Errorf("%w (through the #! line of %s, which runs %s)", err, spec.QuoteName(path), spec.QuoteName(interp))
		}
		// A script named as an interpreter is a wrapper that passes its args on (pyenv's
		// python3 shim, a distribution's node script): they are that interpreter's as well.
		if !isEnv(path) && interpreterOf(path) == nil {
			return nil
		}
	}
	if isEnv(path) {
		return untrustedEnvArgs(command, args, env, depth, wd)
	}
	in := interpreterOf(path)
	if in == nil {
		return nil
	}
	paths, script, libraryPath, preload := in.code(args)
	for _, p := range paths {
		if p.what == "--require" || p.what == "-r" || p.what == "--import" || p.what == "--loader" || p.what == "--experimental-loader" {
			if !strings.HasPrefix(p.path, "/") && !strings.HasPrefix(p.path, ".") {
				continue // a module's name, resolved by node: NODE_PATH's, untrustedEnv's
			}
		}
		if pr := pathtrust.Source(p.path); pr != nil {
			return argsError(command, in, fmt.Sprintf("its option %s names %s", p.what, quoteArg(p.path)), p.path, pr)
		}
	}
	if in.loader {
		for _, n := range pathtrust.LibraryPathEntries(libraryPath) {
			if pr := pathtrust.LibraryDir(n, filepath.Dir(path)); pr != nil {
				return argsError(command, in, "its option --library-path names "+quoteArg(n), n, pr)
			}
		}
		for _, n := range preload {
			if !strings.Contains(n, "/") {
				continue // looked up as a library is: checked with the program
			}
			if pr := pathtrust.Source(n); pr != nil {
				return argsError(command, in, "its option --preload or --audit names "+quoteArg(n), n, pr)
			}
		}
	}
	if wd != "" && in.searchesWorkingDir(args, env) {
		if pr := pathtrust.Source(wd); pr != nil {
			return argsError(command, in, "it runs code given inline (-c), from stdin or a module (-m), with the working directory it inherits from the agent, "+
				quoteArg(wd)+", searched first for the modules it imports (give python -P, or -I, to leave it out, or run the agent where only root may write: / under systemd)", wd, pr)
		}
	}
	if script == "" {
		return nil
	}
	kind := "script"
	if in.loader {
		kind = "program"
	}
	if pr := pathtrust.Source(script); pr != nil {
		return argsError(command, in, "it runs the "+kind+" its args name, "+quoteArg(script), script, pr)
	}
	if !in.loader {
		return nil
	}
	envPath, le := programEnv(env)
	if libraryPath != "" {
		le.LibraryPath = libraryPath // ld.so's --library-path replaces LD_LIBRARY_PATH
	}
	le.Preload = append(le.Preload, preload...)
	if pr := pathtrust.Program(script, script, envPath, le); pr != nil {
		where := pr.Path
		if pr.ELF != "" && pr.Entry != "" {
			where = fmt.Sprintf("%s (the %s of %s)", pr.Path, pr.Entry, spec.QuoteName(pr.ELF))
		}
		return argsError(command, in, "it runs the program its args name, "+quoteArg(script)+", and loads what that loads", where, pr)
	}
	return nil
}

// quoteArg is an argument as the refusal prints it.
func quoteArg(a string) string { return spec.QuoteName(a) }

// argsError is untrustedArgs' refusal: what of command's args names code at name, and pr, what
// another user controls of it.
func argsError(command string, in *interpreter, what, name string, pr *pathtrust.Problem) error {
	fix := "make it and every directory on the way root's and writable by root alone (chown root, chmod go-w)"
	if !filepath.IsAbs(name) {
		fix = "name it by its absolute path, in a directory root's alone"
	}
	return fmt.Errorf("command %s: not run: it is %s, and %s, and %s %s: "+
		"another user could change the code the plugin runs as uid %d: %s, or install the plugin's code where only root may write and name it there",
		spec.QuoteName(command), in.name, what, spec.QuoteName(pr.Path), pr.Why, os.Geteuid(), fix)
}

// isEnv says whether the program at path is env(1), by its file name or its symlink's target's.
func isEnv(path string) bool {
	if filepath.Base(path) == "env" {
		return true
	}
	real, err := filepath.EvalSymlinks(path)
	return err == nil && filepath.Base(real) == "env"
}

// untrustedEnvArgs is untrustedArgs of env(1) run with args: the command it runs (after its
// options, -S's words split, and its NAME=VALUE assignments) is looked up in the PATH it is
// given (the plugin's, or a PATH= among the assignments) and checked as the plugin's command is
// (pathtrust.LookedUp, pathtrust.Program), the assignments with the plugin's environment as
// untrustedEnv checks it (env LD_PRELOAD=... is an exec env's LD_PRELOAD), and its own args in
// turn (python3 /opt/x/plugin.py). Before, env's command was run unchecked: a program another
// user may write in a PATH directory of root's, or one their LD_PRELOAD loaded code in.
func untrustedEnvArgs(command string, args, env []string, depth int, wd string) error {
	if depth >= maxEnvs {
		return fmt.Errorf("command %s: not run: it runs env(1) through more than %d env commands, which the agent does not follow: run the program as the command", spec.QuoteName(command), maxEnvs)
	}
	env = slices.Clone(env)
	var name string
	var rest []string
	for k := 0; k < len(args); k++ {
		a := args[k]
		switch {
		case a == "--":
			if k+1 < len(args) {
				name, rest = args[k+1], args[k+2:]
			}
		case a == "-u" || a == "-C" || a == "--unset" || a == "--chdir":
			k++ // its value
			continue
		case a == "-S" || a == "--split-string":
			if k+1 < len(args) {
				args = slices.Concat(args[:k+1], strings.Fields(args[k+1]), args[k+2:])
			}
			args = slices.Delete(args, k, k+1)
			k--
			continue
		case strings.HasPrefix(a, "-S") || strings.HasPrefix(a, "--split-string="):
			words := strings.Fields(strings.TrimPrefix(strings.TrimPrefix(a, "--split-string="), "-S"))
			args = slices.Concat(args[:k], words, args[k+1:])
			k--
			continue
		case strings.HasPrefix(a, "-"):
			continue
		case strings.Contains(a, "="):
			env = append(env, a)
			continue
		default:
			name, rest = a, args[k+1:]
		}
		break
	}
	if name == "" {
		return nil // env alone prints the environment
	}
	envPath, le := programEnv(env)
	var found string
	var pr *pathtrust.Problem
	if strings.Contains(name, "/") {
		found = name
		if pr = pathtrust.Source(name); pr == nil {
			pr = pathtrust.Program(name, name, envPath, le)
		}
	} else {
		found, pr = pathtrust.LookedUp(name, envPath, le)
	}
	if pr != nil {
		at := pr.Path
		if pr.ELF != "" && pr.Entry != "" {
			at = fmt.Sprintf("%s (the %s of %s)", pr.Path, pr.Entry, spec.QuoteName(pr.ELF))
		} else if pr.Shadowed != "" {
			at = fmt.Sprintf("%s (searched for it first)", pr.Path)
		}
		return fmt.Errorf("command %s: not run: it is env(1), which runs %s, looked up in the PATH it is given, and %s %s: "+
			"another user could change the program the plugin runs as uid %d: make it and every directory on the way root's and writable by root alone (chown root, chmod go-w), "+
			"or name the program as the command",
			spec.QuoteName(command), spec.QuoteName(name), spec.QuoteName(at), pr.Why, os.Geteuid())
	}
	if found == "" {
		return nil // not found: env fails to run it, and says so in the plugin's log
	}
	if err := untrustedEnv(command, found, env); err != nil {
		return err
	}
	return untrustedArgsAt(command, found, rest, env, depth+1, wd)
}

// searchesWorkingDir says whether python, run with args and env, puts its working directory
// (the agent's, which the plugin inherits) first on its module search path: with code given
// inline (-c), a module (-m), or code from stdin, unless -I or -P, or PYTHONSAFEPATH, leaves it
// out (a script's own directory is put there instead: Source checks it with the script). False
// for another interpreter.
func (i *interpreter) searchesWorkingDir(args, env []string) bool {
	if i != &python {
		return false
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONSAFEPATH="); ok && v != "" {
			return false
		}
	}
	safe := false
	for k := 0; k < len(args); k++ {
		a := args[k]
		switch {
		case a == "-":
			return !safe
		case a == "--" || !strings.HasPrefix(a, "-"):
			return false // a script: its directory, not the working one
		case strings.HasPrefix(a, "--"):
			if i.long[a] == "value" {
				k++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			switch {
			case c == 'I' || c == 'P':
				safe = true
			case strings.IndexByte(i.inline, c) >= 0:
				return !safe
			case strings.IndexByte(i.value, c) >= 0:
				if j == len(a)-1 {
					k++
				}
				j = len(a)
			}
		}
	}
	return !safe // no script: the code is read from stdin
}
