package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

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
// script it runs. One reader (parse) serves both its command line and the options it takes
// from its environment (PERL5OPT, RUBYOPT, NODE_OPTIONS: optionPaths).
type interpreter struct {
	name string // what the refusal calls it: "python", "the dynamic loader"
	// letters are the single-dash options, which may be grouped (-ec, -We): inline ends the
	// arguments (-c, -e), value takes the rest of the group or the next argument as a value,
	// path the same as a path loaded as code, module the same as a module loaded first, by
	// its path or its name (node's and ruby's -r), lib as a module whose lib=DIR,... puts
	// DIR first on the module path (perl's -Mlib=, -mlib=), startup a flag that has a shell
	// read its startup files (-i, -l), noEnv one that has python ignore its PYTHON*
	// variables (-E, -I), safePath one that leaves its working directory off its module path
	// (-I, -P).
	inline, value, path, module, lib, startup, noEnv, safePath string
	// attached are the single-dash options whose value, if any, is the rest of their group
	// only (perl's -x[dir], ruby's -i[ext]): the letters after them are not options.
	attached string
	// digits are the single-dash options whose value is only the digits (octal, or hex after
	// x) or, for perl's -C, the letters of its set, that follow them in the group: the letters
	// after those are options again (perl -le CODE is -l and -e, -0777e -0777 and -e; after
	// -C's, perl refuses any, and reading them as options refuses no more than it runs).
	digits string
	// search is the flag that has it look its script up in PATH (perl's and ruby's -S).
	search string
	// chdir are the single-dash options that change its working directory as they are read,
	// their value next (ruby's -C and -X), and chdirAttached those whose value, if any, is the
	// rest of their group (ruby's -x[dir]): a relative script, or a path an option after them
	// names, is opened from there.
	chdir, chdirAttached string
	// chdirLate are the single-dash options whose value, if any, is the rest of their group and
	// a directory it moves to once its script is opened, before it searches its module path
	// (perl's -x[dir]): a relative -I or -Mlib= directory, wherever written, is searched from
	// there; the script is not.
	chdirLate string
	// pycachePrefix is python's -X pycache_prefix=DIR: the directory it reads (and writes)
	// the compiled modules it imports from, as PYTHONPYCACHEPREFIX names it.
	pycachePrefix bool
	// aliases are arguments it reads as others (node's -pe is --print --eval, the code next).
	aliases map[string]string
	// long are the double-dash options: "inline", "value" or "path", "module" (node's
	// --require, --import), "envfile" (node's --env-file: variables it sets), "startup"
	// (bash's --login), "flag" (takes no value), "list" (ld.so's --library-path, a directory
	// list), "preload" (ld.so's --preload and --audit, a list of libraries). One not listed
	// takes no value, or has it after "="; with strictLong (node, whose long options may
	// take their value in the next argument), one not listed, without "=", is refused unless
	// nothing but "--" follows: what it takes cannot be told.
	long       map[string]string
	strictLong bool
	// dashEnds says a lone "-" ends the options as "--" does, the script next (a shell's);
	// otherwise it is the script read from stdin.
	dashEnds bool
	// inlineEnds says an inline option ends the options, what follows the code's own
	// arguments (python's -c and -m). Otherwise the options go on: a shell's -c is a flag,
	// the code the first argument no option takes; perl's, ruby's and node's -e take the code
	// as their value, and more options may follow (perl -e CODE -Mlib=DIR).
	inlineEnds bool
	// zsh reads ZDOTDIR's (or HOME's) .zshenv before any script.
	zsh bool
	// loader is the dynamic loader run as a program: its script is an ELF program, checked
	// with what its options add to its loader's environment.
	loader bool
	// underscoreDash says it reads '_' as '-' in a long option's name (node: --inspect_brk is
	// --inspect-brk).
	underscoreDash bool
}

// nodeLong are node's double-dash options (node --help, v20 to v22): those that take a value
// (after "=" or in the next argument), and those that take none.
var nodeLong = func() map[string]string {
	m := map[string]string{
		"--eval": "inline", "--print": "inline", "--require": "module", "--import": "module", "--loader": "module",
		"--experimental-loader": "module", "--env-file": "envfile", "--env-file-if-exists": "envfile",
		"--openssl-config": "path", "--snapshot-blob": "path", "--experimental-policy": "path",
		"--startup-snapshot": "path", "--experimental-config-file": "path",
		"--interactive": "startup",
		"--inspect":     "inspector", "--inspect-brk": "inspector", "--inspect-wait": "inspector",
		"--inspect-brk-node": "inspector",
	}
	for _, v := range strings.Fields(`--allow-fs-read --allow-fs-write --build-snapshot-config --conditions --cpu-prof-dir
		--cpu-prof-interval --cpu-prof-name --diagnostic-dir --disable-proto --disable-warning --dns-result-order
		--experimental-default-type --experimental-sea-config --heap-prof-dir --heap-prof-interval --heap-prof-name
		--heapsnapshot-near-heap-limit --heapsnapshot-signal --icu-data-dir --input-type --inspect-port --debug-port
		--inspect-publish-uid --max-http-header-size --network-family-autoselection-attempt-timeout --policy-integrity
		--redirect-warnings --report-dir --report-directory --report-filename --report-signal --secure-heap
		--secure-heap-min --test-concurrency --test-name-pattern --test-reporter --test-reporter-destination
		--test-shard --test-timeout --title --tls-cipher-list --tls-keylog --trace-event-categories
		--trace-event-file-pattern --trace-require-module --unhandled-rejections --use-largepages --v8-pool-size
		--watch-path`) {
		m[v] = "value"
	}
	for _, f := range strings.Fields(`--abort-on-uncaught-exception --allow-addons --allow-child-process --allow-wasi
		--allow-worker --build-snapshot --check --completion-bash --cpu-prof --disable-wasm-trap-handler
		--disallow-code-generation-from-strings --enable-etw-stack-walking --enable-fips
		--enable-network-family-autoselection --enable-source-maps --experimental-eventsource
		--experimental-import-meta-resolve --experimental-network-imports --experimental-network-inspection
		--experimental-permission --permission --experimental-print-required-tla --experimental-require-module
		--experimental-test-coverage --experimental-test-module-mocks --experimental-vm-modules
		--experimental-wasm-modules --experimental-websocket --expose-gc --force-context-aware --force-fips
		--force-node-api-uncaught-exceptions-policy --frozen-intrinsics --heap-prof --help
		--huge-max-old-generation-size --insecure-http-parser --interpreted-frames-native-stack --jitless
		--no-addons --no-deprecation --no-experimental-detect-module --no-experimental-fetch
		--no-experimental-global-customevent --no-experimental-global-webcrypto --no-experimental-repl-await
		--no-experimental-require-module --no-extra-info-on-fatal-exception --no-force-async-hooks-checks
		--no-global-search-paths --no-network-family-autoselection --no-warnings --node-memory-debug
		--openssl-legacy-provider --openssl-shared-config --pending-deprecation --preserve-symlinks
		--preserve-symlinks-main --prof --prof-process --report-compact --report-exclude-network
		--report-on-fatalerror --report-on-signal --report-uncaught-exception --test --test-force-exit --test-only
		--throw-deprecation --tls-max-v1.2 --tls-max-v1.3 --tls-min-v1.0 --tls-min-v1.1 --tls-min-v1.2
		--tls-min-v1.3 --trace-atomics-wait --trace-deprecation --trace-exit --trace-promises --trace-sigint
		--trace-sync-io --trace-tls --trace-uncaught --trace-warnings --track-heap-objects --use-bundled-ca
		--use-openssl-ca --v8-options --version --watch --watch-preserve-output --zero-fill-buffers
		--experimental-strip-types --experimental-transform-types
		--experimental-detect-module --experimental-sqlite --experimental-webstorage
		--stack-trace-limit --max-old-space-size --max-semi-space-size --stack-size`) {
		m[f] = "flag" // V8's options (the last line) take their values only after "="
	}
	return m
}()

var (
	shell = interpreter{name: "the shell", inline: "cs", value: "oO", startup: "il", dashEnds: true,
		long: map[string]string{"--rcfile": "path", "--init-file": "path", "--login": "startup"}}
	zsh    = interpreter{name: "zsh", inline: "cs", value: "oO", startup: "il", dashEnds: true, zsh: true, long: map[string]string{"--login": "startup", "--interactive": "startup"}}
	python = interpreter{name: "python", inline: "cm", inlineEnds: true, value: "WXQ", noEnv: "EI", safePath: "IP", pycachePrefix: true, long: map[string]string{"--check-hash-based-pycs": "value"}}
	perl   = interpreter{name: "perl", inline: "eE", value: "", lib: "Mm", path: "I", attached: "xidDFV", digits: "l0C", search: "S", chdirLate: "x"}
	ruby   = interpreter{name: "ruby", inline: "e", value: "E", module: "r", path: "I", attached: "FKTWxi", digits: "0", search: "S", chdir: "CX", chdirAttached: "x"}
	node   = interpreter{name: "node", inline: "ep", value: "C", module: "r", long: nodeLong, strictLong: true, underscoreDash: true, aliases: map[string]string{"-pe": "-e"}}
	loader = interpreter{name: "the dynamic loader", loader: true, long: map[string]string{
		"--library-path": "list", "--preload": "preload", "--audit": "preload", "--argv0": "value",
		"--inhibit-rpath": "value", "--glibc-hwcaps-prepend": "value", "--glibc-hwcaps-mask": "value"}}
)

// interpreters names each by the file name of the program the command is (its symlinks
// resolved, or as named): python3.11, bash, ld-linux-x86-64.so.2. These patterns are the
// whole rule (docs/agent.md repeats them): a program under another name (a hard link, a copy
// renamed, busybox's applets) is not read as an interpreter.
//
// The patterns are compiled on first use, not at package initialisation: every volctl process
// would compile them at start-up (TestNoRegexpCompiledAtInit).
var interpreters = sync.OnceValue(func() []interpreterName {
	return []interpreterName{
		{regexp.MustCompile(`^(sh|bash|rbash|dash|ash|ksh|ksh93|mksh|lksh|pdksh|posh|yash)$`), &shell},
		{regexp.MustCompile(`^zsh[0-9.]*$`), &zsh},
		{regexp.MustCompile(`^(python|pypy)[0-9.]*(d|m|dm|-dbg)?$`), &python},
		{regexp.MustCompile(`^perl[0-9.]*(-[a-z0-9_]+-linux-gnu[a-z]*)?$`), &perl},
		{regexp.MustCompile(`^ruby[0-9.]*$`), &ruby},
		{regexp.MustCompile(`^(node|nodejs)[0-9.]*$`), &node},
		{regexp.MustCompile(`^(ld-linux.*\.so(\.[0-9]+)*|ld\.so|ld64\.so(\.[0-9]+)*)$`), &loader},
	}
})

// interpreterName is one of interpreters' patterns and the interpreter it names.
type interpreterName struct {
	re *regexp.Regexp
	in *interpreter
}

// interpreterOf is the interpreter the program at path is, or nil for one the agent does not
// know as one.
func interpreterOf(path string) *interpreter {
	names := []string{filepath.Base(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		names = append(names, filepath.Base(real))
	}
	for _, n := range names {
		for _, i := range interpreters() {
			if i.re.MatchString(n) {
				return i.in
			}
		}
	}
	return nil
}

// argCode is a path an interpreter's arguments have it load code from: what names it ("the
// script", "-I", "--preload") and the path. late says it is opened from the working directory
// the interpreter is in once every option is read (ruby's -r, required after them, and its
// -I ./DIR, kept relative), not the one it was in where the option was read.
type argCode struct {
	what, path string
	late       bool
}

// parsed is what an interpreter's arguments have it load and run (interpreter.parse).
type parsed struct {
	paths    []argCode // files and directories its options load code from (-I, --rcfile, -Mlib='s)
	modules  []argCode // modules its options load first, by path or name (node's and ruby's -r)
	envFiles []argCode // files of variables it reads (node's --env-file)
	// script is the first argument no option takes, the code it runs; "" when an option gives
	// the code inline, or stdin does (stdin true then, or with no argument left).
	script string
	inline bool // code given inline (-c, -e), or a module (python's -m), or from stdin
	// startup: a flag has a shell read its startup files (interactive: -i, which has a POSIX
	// shell read ENV as well); noEnv: python ignores its PYTHON* variables; safePath: python
	// leaves its working directory off its module path; search: the script is looked up in
	// PATH (perl -S).
	startup, interactive, noEnv, safePath, search bool
	// unknown is a long option the interpreter (strictLong) may take a value for, which the
	// agent does not know, without "=": args[unknownAt]. Where the parse stopped.
	unknown   string
	unknownAt int
	// unreadable is an option's value the agent cannot read (perl's -M'lib LIST').
	unreadable string
	// the dynamic loader's: what its options add to its environment.
	libraryPath string
	preload     []string
	// inspector is node's option that opens its inspector (--inspect, --inspect-brk,
	// --inspect-wait): a TCP port any local user may connect to and run code through.
	inspector string
	// chdir is the working directory ruby's -C, -X or -xDIR moved it to, relative to the one it
	// started in when relative; "" for none.
	chdir string
	// runDir is the directory perl's last -xDIR moves it to once the script is opened (relative
	// to the one it started in when relative), where its relative -I and -Mlib= directories are
	// searched; "" for none.
	runDir, runDirOpt string
}

// from is the path name names after the options that changed the working directory (chdir).
// It is not cleaned: "link/.." is the parent of link's target, as chdir(2) and open(2) take it,
// which only the file system tells (dotDotAfterSymlink).
func (p *parsed) from(name string) string {
	if p.chdir == "" || name == "" || filepath.IsAbs(name) {
		return name
	}
	return strings.TrimSuffix(p.chdir, "/") + "/" + name
}

// dotDotAfterSymlink is the symlink a ".." of path (absolute, or relative to wd) follows, or ""
// for none: the kernel takes "link/.." to the parent of link's target, where a path cleaned as
// text (filepath.Clean) names the directory link is in, another place.
func dotDotAfterSymlink(wd, path string) string {
	if !filepath.IsAbs(path) {
		if wd == "" {
			return ""
		}
		path = wd + "/" + path
	}
	cur := "/"
	for _, c := range strings.Split(path, "/") {
		switch c {
		case "", ".":
		case "..":
			if real, err := filepath.EvalSymlinks(cur); err == nil && real != cur {
				return cur
			}
			cur = filepath.Dir(cur)
		default:
			cur = filepath.Join(cur, c)
		}
	}
	return ""
}

// cd is the working directory moved to dir, as chdir(2) does it.
func (p *parsed) cd(dir string) {
	if dir != "" {
		p.chdir = p.from(dir)
	}
}

// parse reads args as i reads them.
func (i *interpreter) parse(args []string) parsed {
	p := i.parseOptions(args)
	for _, cs := range [][]argCode{p.paths, p.modules} {
		for k := range cs {
			switch {
			case cs[k].late && p.runDir != "" && !filepath.IsAbs(cs[k].path):
				cs[k].what += ", searched from the directory " + p.runDirOpt + " moves it to,"
				cs[k].path = strings.TrimSuffix(p.runDir, "/") + "/" + cs[k].path
			case cs[k].late:
				cs[k].path = p.from(cs[k].path)
			}
			cs[k].late = false
		}
	}
	return p
}

// parseOptions is parse, but for the paths opened from where the options leave it (late).
func (i *interpreter) parseOptions(args []string) parsed {
	var p parsed
	for k := 0; k < len(args); k++ {
		a := args[k]
		if alias, ok := i.aliases[a]; ok {
			a = alias
		}
		next := func() string {
			if k+1 < len(args) {
				k++
				return args[k]
			}
			return ""
		}
		switch {
		case p.inline && !strings.HasPrefix(a, "-") && !(i.dashEnds && strings.HasPrefix(a, "+")):
			return p // the inline code's (a shell's -c) or its arguments
		case p.inline && (a == "--" || a == "-"):
			return p
		case a == "--" || (a == "-" && i.dashEnds):
			if k+1 < len(args) {
				p.script = p.from(args[k+1])
			} else {
				p.inline = true // stdin
			}
			return p
		case a == "-":
			p.inline = true // stdin
			return p
		case strings.HasPrefix(a, "--"):
			name, v, eq := strings.Cut(a, "=")
			key := name
			if i.underscoreDash {
				key = "--" + strings.ReplaceAll(name[2:], "_", "-")
			}
			kind := i.long[key]
			if kind == "" {
				if i.strictLong && !eq && k+1 < len(args) && args[k+1] != "--" {
					p.unknown, p.unknownAt = name, k
					return p
				}
				continue
			}
			if kind == "flag" {
				continue
			}
			if kind == "startup" {
				p.startup = true
				continue
			}
			if kind == "inspector" {
				p.inspector = name // its host:port only after "="
				continue
			}
			if !eq {
				v = next()
			}
			switch kind {
			case "inline":
				p.inline = true
				if i.inlineEnds {
					return p
				}
			case "path":
				p.paths = append(p.paths, argCode{what: name, path: v})
			case "module":
				p.modules = append(p.modules, argCode{what: name, path: v})
			case "envfile":
				p.envFiles = append(p.envFiles, argCode{what: name, path: v})
			case "list":
				p.libraryPath = v
			case "preload":
				p.preload = append(p.preload, strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ' ' })...)
			}
		case strings.HasPrefix(a, "-") || (i.dashEnds && strings.HasPrefix(a, "+")):
			on := a[0] == '-'
			for j := 1; j < len(a); j++ {
				c := a[j]
				has := func(set string) bool { return strings.IndexByte(set, c) >= 0 }
				if on && has(i.startup) {
					p.startup = true
					p.interactive = p.interactive || c == 'i'
				}
				if has(i.search) {
					p.search = true
				}
				if has(i.noEnv) {
					p.noEnv = true
				}
				if has(i.safePath) {
					p.safePath = true
				}
				switch {
				case has(i.inline):
					p.inline = true
					switch {
					case i.inlineEnds:
						return p
					case !i.dashEnds: // the code is its value
						if j == len(a)-1 {
							next()
						}
						j = len(a)
					}
				case has(i.attached):
					if strings.IndexByte(i.chdirAttached, c) >= 0 {
						p.cd(a[j+1:])
					}
					if strings.IndexByte(i.chdirLate, c) >= 0 && j+1 < len(a) {
						p.runDir, p.runDirOpt = a[j+1:], "-"+a[j:] // the last one's, from where it started
					}
					j = len(a)
				case has(i.digits):
					// -l and -0 take octal digits (-0 hex after x), -C digits or its letters.
					set := "01234567"
					if c == '0' && j+1 < len(a) && (a[j+1] == 'x' || a[j+1] == 'X') {
						set, j = "0123456789abcdefABCDEF", j+1
					} else if c == 'C' {
						set = "0123456789IOEioeSDAaL"
					}
					for j+1 < len(a) && strings.IndexByte(set, a[j+1]) >= 0 {
						j++
					}
				case has(i.value) || has(i.path) || has(i.module) || has(i.lib) || has(i.chdir):
					v := a[j+1:]
					if v == "" {
						v = next()
					}
					opt := "-" + string(c)
					switch {
					case has(i.chdir):
						p.cd(v)
					case c == 'X' && i.pycachePrefix:
						if dir, ok := strings.CutPrefix(v, "pycache_prefix="); ok {
							p.paths = append(p.paths, argCode{what: "-X pycache_prefix", path: dir})
						}
					case has(i.path):
						if strings.HasPrefix(v, "./") || i.chdirLate != "" && !filepath.IsAbs(v) {
							// ruby's expand_include_path keeps it relative; perl's @INC entry is
							// searched from where -xDIR leaves it
							p.paths = append(p.paths, argCode{what: opt, path: v, late: true})
						} else {
							p.paths = append(p.paths, argCode{what: opt, path: p.from(v)})
						}
					case has(i.module):
						late := strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../")
						p.modules = append(p.modules, argCode{what: opt, path: v, late: late}) // required once the options are read
					case has(i.lib):
						if dirs, ok := strings.CutPrefix(v, "lib="); ok {
							for _, d := range strings.Split(dirs, ",") {
								p.paths = append(p.paths, argCode{what: opt + "lib=", path: d, late: i.chdirLate != "" && !filepath.IsAbs(d)})
							}
						} else if rest, ok := strings.CutPrefix(strings.TrimLeft(v, " \t"), "lib"); ok && rest != "" && !isPerlWordChar(rest[0]) && rest[0] != ':' {
							// -M'lib LIST' is `use lib LIST;`: a list of perl's, which
							// the agent does not read.
							p.unreadable = opt + v
							return p
						}
					}
					j = len(a)
				}
			}
		default:
			p.script = p.from(a)
			return p
		}
	}
	p.inline = true // no script: the code is read from stdin
	return p
}

// isPerlWordChar says whether b may go on a perl module's name (lib, or libfoo).
func isPerlWordChar(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
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
	err := untrustedReadings(command, path, in, args, env, wd, maxUnknown)
	var missing *missingScriptError
	if errors.As(err, &missing) {
		return missing.err
	}
	return err
}

// maxUnknown bounds the long options untrustedReadings reads both ways, one after another.
const maxUnknown = 6

// missingScriptError is untrustedArgs' refusal of a script that is not there: one reading of
// args an unknown option leaves open (untrustedReadings) may name no file where another runs one.
type missingScriptError struct{ err error }

func (e *missingScriptError) Error() string { return e.err.Error() }

// untrustedReadings is untrustedArgsAt of interpreter in, found at path: a long option the
// agent does not know (node's, strictLong), without "=", may take the next argument or not
// (V8's options, --trace-gc, never do): args are checked read both ways, and refused if either
// reading runs code another user controls, or if neither runs a script that exists. budget
// bounds the unknown options read so.
func untrustedReadings(command, path string, in *interpreter, args, env []string, wd string, budget int) error {
	p := in.parse(args)
	if p.unknown == "" {
		return untrustedParsed(command, path, in, p, env, wd)
	}
	if budget == 0 {
		return fmt.Errorf("command %s: not run: it is %s, and its options %s and more before it are not ones the agent knows: whether each takes the next argument as its value, "+
			"and so which argument is the script it runs, cannot be told: give their values after \"=\" (%s=VALUE), or put \"--\" before the script",
			spec.QuoteName(command), in.name, spec.QuoteName(p.unknown), p.unknown)
	}
	var missing error
	for _, n := range []int{1, 2} { // a flag; a value taking the next argument
		reading := slices.Delete(slices.Clone(args), p.unknownAt, min(p.unknownAt+n, len(args)))
		err := untrustedReadings(command, path, in, reading, env, wd, budget-1)
		var m *missingScriptError
		if errors.As(err, &m) {
			if missing == nil {
				missing = err
			}
			continue
		}
		if err != nil {
			how := "with no value"
			if n == 2 {
				how = "as taking " + quoteArg(args[p.unknownAt+1]) + " for its value"
			}
			return fmt.Errorf("%w (reading its option %s, which the agent does not know, %s: give its value after \"=\" (%s=VALUE), or put \"--\" before the script)",
				err, p.unknown, how, p.unknown)
		}
		return nil
	}
	return missing
}

// readings are the ways i may read args (parse): one, or, at a long option it does not know
// without "=" (strictLong), each way of reading it (a flag; a value taking the next argument)
// in turn, up to budget such options one after another; past that, unknown names the option.
func (i *interpreter) readings(args []string, budget int) (ps []parsed, unknown string) {
	p := i.parse(args)
	if p.unknown == "" {
		return []parsed{p}, ""
	}
	if budget == 0 {
		return nil, p.unknown
	}
	for _, n := range []int{1, 2} {
		r, u := i.readings(slices.Delete(slices.Clone(args), p.unknownAt, min(p.unknownAt+n, len(args))), budget-1)
		if u != "" {
			return nil, u
		}
		ps = append(ps, r...)
	}
	return ps, ""
}

// untrustedParsed is untrustedArgsAt of interpreter in, found at path, with args read as p.
func untrustedParsed(command, path string, in *interpreter, p parsed, env []string, wd string) error {
	if p.inspector != "" {
		return inspectorError(command, p.inspector, "it is node, and its args give")
	}
	if p.unreadable != "" {
		return fmt.Errorf("command %s: not run: it is %s, and its option %s gives a list the agent does not read, which may put a directory first on its module path: "+
			"give the directories as -Mlib=DIR,DIR", spec.QuoteName(command), in.name, spec.QuoteName(p.unreadable))
	}
	for _, c := range slices.Concat(p.paths, p.modules, p.envFiles, []argCode{{what: "the script its args name", path: p.script}}) {
		if link := dotDotAfterSymlink(wd, c.path); link != "" {
			return fmt.Errorf("command %s: not run: it is %s, and %s, %s, has a \"..\" after the symlink %s, which the kernel takes to the parent of the symlink's target, not the directory it is in: "+
				"name the path without \"..\"", spec.QuoteName(command), in.name, c.what, quoteArg(c.path), spec.QuoteName(link))
		}
	}
	// at is a path of the arguments as the interpreter opens it: a relative one from the
	// working directory it runs in (wd), or, that unknown, relative (Source refuses it).
	at := func(name string) string {
		if wd != "" && name != "" && !filepath.IsAbs(name) {
			return filepath.Join(wd, name)
		}
		return name
	}
	check := func(what, name string) error {
		if pr := pathtrust.Source(at(name)); pr != nil {
			if at(name) != name {
				what += ", " + quoteArg(at(name)) + " from the working directory it inherits from the agent,"
			}
			return argsError(command, in, what, at(name), pr)
		}
		return nil
	}
	for _, c := range p.paths {
		if err := check(fmt.Sprintf("its option %s names %s", c.what, quoteArg(c.path)), c.path); err != nil {
			return err
		}
	}
	for _, m := range p.modules {
		if err := untrustedModule(command, in, m, wd); err != nil {
			return err
		}
	}
	for _, f := range p.envFiles {
		if err := check(fmt.Sprintf("its option %s names %s, whose variables it sets", f.what, quoteArg(f.path)), f.path); err != nil {
			return err
		}
		vars, err := envFileVars(at(f.path))
		if err != nil {
			if f.what == "--env-file-if-exists" && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("command %s: not run: it is %s, and its option %s names %s, which cannot be read: %v: name a file of variables that exists, root's",
				spec.QuoteName(command), in.name, f.what, spec.QuoteName(at(f.path)), err)
		}
		if err := untrustedEnv(command, path, vars); err != nil {
			return fmt.Errorf("%w (set by %s, which its option %s names)", err, spec.QuoteName(at(f.path)), f.what)
		}
	}
	for _, f := range startupFiles(in, p, env) {
		if strings.ContainsAny(f, "$`") {
			return fmt.Errorf("command %s: not run: it is %s, which reads a startup file its environment names (ENV), and that holds what the shell expands ($ or `) before it runs the file: "+
				"what it runs first cannot be checked: name the file by a plain absolute path, or take ENV out of the exec block's env", spec.QuoteName(command), in.name)
		}
		if err := check("it reads "+quoteArg(f)+" first, a startup file its flags and its environment (ENV, PYTHONSTARTUP, HOME, ZDOTDIR) name", f); err != nil {
			return err
		}
	}
	if in.loader {
		for _, n := range pathtrust.LibraryPathEntries(p.libraryPath) {
			if pr := pathtrust.LibraryDir(n, filepath.Dir(path)); pr != nil {
				return argsError(command, in, "its option --library-path names "+quoteArg(n), n, pr)
			}
		}
		for _, n := range p.preload {
			if !strings.Contains(n, "/") {
				continue // looked up as a library is: checked with the program
			}
			if err := check("its option --preload or --audit names "+quoteArg(n), n); err != nil {
				return err
			}
		}
	}
	if wd != "" && in.searchesWorkingDirParsed(p, env) {
		if pr := pathtrust.Source(wd); pr != nil {
			return argsError(command, in, "it runs code given inline (-c), from stdin or a module (-m), with the working directory it inherits from the agent, "+
				quoteArg(wd)+", searched first for the modules it imports (give python -P, or -I, to leave it out, or run the agent where only root may write: / under systemd)", wd, pr)
		}
	}
	if p.script == "" {
		return nil
	}
	kind := "script"
	if in.loader {
		kind = "program"
	}
	envPath, le := programEnv(env)
	if p.search && !strings.Contains(p.script, "/") {
		// perl -S NAME, ruby -S NAME: the script is looked up in the PATH it is given.
		found, pr := pathtrust.LookedUp(p.script, envPath, le)
		if pr != nil {
			return argsError(command, in, "it runs the script its args name, "+quoteArg(p.script)+", looked up in the PATH it is given (-S)", pr.Path, pr)
		}
		if found == "" {
			return &missingScriptError{fmt.Errorf("command %s: not run: it is %s, and the script its args name, %s, to be looked up in the PATH it is given (-S), is not there: "+
				"no plugin runs a script that is not there: name the script by its absolute path", spec.QuoteName(command), in.name, quoteArg(p.script))}
		}
		return nil
	}
	script := at(p.script)
	if err := check("it runs the "+kind+" its args name, "+quoteArg(p.script), p.script); err != nil {
		return err
	}
	if _, err := os.Stat(script); errors.Is(err, fs.ErrNotExist) {
		// A word read as the script that is not one (a value of an option the agent misread)
		// names no file: refused, not taken as harmless, since what runs instead is unknown.
		return &missingScriptError{fmt.Errorf("command %s: not run: it is %s, and the %s its args name, %s, is not there: no plugin runs a %s that is not there, "+
			"and the agent may have read another argument as it: name the %s by its absolute path, and put \"--\" before it if an option comes first",
			spec.QuoteName(command), in.name, kind, spec.QuoteName(script), kind, kind)}
	}
	if !in.loader {
		return nil
	}
	if p.libraryPath != "" {
		le.LibraryPath = p.libraryPath // ld.so's --library-path replaces LD_LIBRARY_PATH
	}
	le.Preload = append(le.Preload, p.preload...)
	if pr := pathtrust.Program(script, script, envPath, le); pr != nil {
		where := pr.Path
		if pr.ELF != "" && pr.Entry != "" {
			where = fmt.Sprintf("%s (the %s of %s)", pr.Path, pr.Entry, spec.QuoteName(pr.ELF))
		}
		return argsError(command, in, "it runs the program its args name, "+quoteArg(script)+", and loads what that loads", where, pr)
	}
	return nil
}

// inspectorError is the refusal of node run with its inspector open (opt: --inspect, which
// where gives: its args, or NODE_OPTIONS): node listens on a TCP port (127.0.0.1:9229 unless
// told otherwise), which any local user may connect to, unauthenticated, and run JavaScript
// through in the plugin, as the agent's user. A loopback port is no other user's to keep out.
func inspectorError(command, opt, where string) error {
	return fmt.Errorf("command %s: not run: %s node's option %s, which opens node's inspector on a TCP port, through which any local user may run code in the plugin as uid %d: "+
		"take %s out (attach a debugger to a plugin only where no other user logs in)", spec.QuoteName(command), where, opt, os.Geteuid(), opt)
}

// untrustedModule refuses the module m an option of in (node's --require, --import, -r;
// ruby's -r) loads first, run in wd: one named by a path (after node's file://) is that file,
// from wd when relative; a bare name is ruby's library, looked up in its module path (RUBYLIB:
// untrustedEnv's), or node's package, looked up in the node_modules of wd and each directory
// above it before NODE_PATH's: each is checked, made or not (wd unknown: the name is relative).
func untrustedModule(command string, in *interpreter, m argCode, wd string) error {
	name, url := m.path, false
	if in == &node {
		name, url = nodeModulePath(m.what, m.path)
	} else if rest, ok := strings.CutPrefix(name, "file:"); ok {
		name, url = fileURLPath(rest), true
	}
	var names []string
	switch {
	case url || strings.HasPrefix(name, "/") || strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || name == "." || name == "..":
		names = []string{name}
	case strings.HasPrefix(name, "~"):
		names = []string{name} // relative: refused
	case in != &node:
		return nil // ruby's library by name
	case strings.HasPrefix(name, "node:"):
		return nil // node's own module
	case m.what != "-r" && m.what != "--require" && urlScheme().MatchString(name):
		return nil // --import's URL of a scheme node does not load from disk (data:, https:); require's a:b is a package's name
	case wd == "":
		names = []string{name}
	case strings.HasPrefix(name, "#") && m.what != "-r" && m.what != "--require":
		names = nodeImportsNames(name, wd)
	default:
		names = nodePackageNames(name, wd)
	}
	for _, n := range names {
		if !filepath.IsAbs(n) && wd != "" {
			n = filepath.Join(wd, n)
		}
		if pr := pathtrust.Source(n); pr != nil {
			what := fmt.Sprintf("its option %s names %s", m.what, quoteArg(m.path))
			if n != name {
				what += ", looked up in " + quoteArg(n)
			}
			return argsError(command, in, what, n, pr)
		}
	}
	return nil
}

// nodeModulePath is the file node loads for the module its option opt (--require, -r,
// --import, --loader, --experimental-loader) names by spec, and whether spec names one by a
// path: a file: URL is read by fileURLPath; so is a path (/, ./, ../ first, or . or ..) given
// to --import or a loader, which node resolves as an ES module specifier, a URL relative to the
// working directory (/x/%2e%2e/y.mjs is /y.mjs, %XX decoded, a #fragment off: mend33a; before,
// the kernel's reading of it was checked). --require's path is a path, as the kernel reads it.
func nodeModulePath(opt, spec string) (string, bool) {
	if rest, ok := strings.CutPrefix(spec, "file:"); ok {
		return fileURLPath(rest), true
	}
	esm := opt != "-r" && opt != "--require"
	if esm && (strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || spec == "." || spec == "..") {
		n := fileURLPath(spec)
		if !filepath.IsAbs(n) && n != "." && n != ".." && !strings.HasPrefix(n, "../") {
			n = "./" + n // relative still, from the working directory
		}
		return n, true
	}
	return spec, false
}

// nodeImportsNames are the files node reads to load the subpath import name (#hook) from wd,
// to be checked: the package.json of wd and each directory above it, to the first that is
// there (node's package scope: one not made yet where another user may make it is theirs), and
// what that one's "imports" map name to (its key, else each "*" pattern key it matches), each
// target of any condition, as node resolves it (./x in the package's directory, a pattern's
// directory; a package's name in its node_modules and those above) (mend33a; before, #hook
// was looked up in node_modules only, and root's package.json mapping it to another user's
// file was loaded).
func nodeImportsNames(name, wd string) []string {
	var names []string
	dir := ""
	for d := wd; ; d = filepath.Dir(d) {
		f := filepath.Join(d, "package.json")
		names = append(names, f)
		if _, err := os.Stat(f); err == nil {
			dir = d
			break
		}
		if d == "/" || d == "." {
			return names
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	var pj struct {
		Imports any `json:"imports"`
	}
	if err != nil || json.Unmarshal(b, &pj) != nil {
		return names // node refuses it, or the check of the file says whose it is
	}
	walk := func(v any) {
		eachJSONString(v, func(v string) {
			if rest, ok := strings.CutPrefix(v, "./"); ok {
				names = append(names, filepath.Join(dir, patternDir(rest)))
				return
			}
			names = append(names, nodePackageNames(v, dir)...)
		})
	}
	imports, _ := pj.Imports.(map[string]any)
	if v, ok := imports[name]; ok {
		walk(v)
		return names
	}
	for k, v := range imports {
		if pre, post, ok := strings.Cut(k, "*"); ok && strings.HasPrefix(name, pre) && strings.HasSuffix(name, post) {
			walk(v) // node takes the longest such key: each is checked
		}
	}
	return names
}

// nodePackageNames are the files and directories node reads to load the bare package
// specifier spec (pkg, pkg/sub, @scope/pkg/sub) from dir, to be checked: the node_modules of
// dir and each directory above it up to the first that has the package (a nearer one another
// user may make, or make the package in, is loaded first), and in that one the package's
// directory (a symlink, as npm link makes, is followed to its target), its package.json, and
// the files node loads from it: what its "exports" map name (each target of any condition,
// as for "imports"), else for the package itself its "main" (as written, with .js, or its
// index.js) and index.js, else the subpath. Before (round 33), only the node_modules
// directories were checked, and a root-owned node_modules holding another user's package (a
// symlink to their directory, a file of theirs in it) had node load their code as root
// (TestNodeBarePackageIsCheckedToTheFileNodeLoads).
func nodePackageNames(spec, dir string) []string {
	parts := strings.SplitN(spec, "/", 3)
	pkg, sub := parts[0], strings.Join(parts[1:], "/")
	if strings.HasPrefix(spec, "@") && len(parts) > 1 {
		pkg, sub = parts[0]+"/"+parts[1], strings.Join(parts[2:], "/")
	}
	var names []string
	for d := dir; ; d = filepath.Dir(d) {
		if filepath.Base(d) != "node_modules" {
			nm := filepath.Join(d, "node_modules")
			names = append(names, nm)
			if root := filepath.Join(nm, pkg); isDir(root) {
				return append(names, nodePackageFiles(root, sub)...)
			}
		}
		if d == "/" || d == "." {
			return names
		}
	}
}

// nodePackageFiles are the package directory root, its package.json and the files node loads
// from it for subpath sub ("" for the package itself) (nodePackageNames).
func nodePackageFiles(root, sub string) []string {
	names := []string{root, filepath.Join(root, "package.json")}
	var pj struct {
		Exports any    `json:"exports"`
		Main    string `json:"main"`
	}
	if b, err := os.ReadFile(filepath.Join(root, "package.json")); err == nil {
		json.Unmarshal(b, &pj) // node refuses one it cannot read; the check of the file says whose it is
	}
	switch {
	case pj.Exports != nil:
		// Every subpath's, every condition's: node loads one of them.
		eachJSONString(pj.Exports, func(v string) {
			names = append(names, filepath.Join(root, patternDir(strings.TrimPrefix(v, "./"))))
		})
	case sub != "":
		names = append(names, filepath.Join(root, sub))
	default:
		if pj.Main != "" {
			m := filepath.Join(root, pj.Main)
			names = append(names, m, m+".js", filepath.Join(m, "index.js"))
		}
		names = append(names, filepath.Join(root, "index.js"))
	}
	return names
}

// eachJSONString calls f with every string in v, a decoded JSON value: a package.json's
// "imports" or "exports" entry, whose conditions nest objects and arrays.
func eachJSONString(v any, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for _, w := range v {
			eachJSONString(w, f)
		}
	case []any:
		for _, w := range v {
			eachJSONString(w, f)
		}
	case string:
		f(v)
	}
}

// patternDir is a package.json target with a "*" pattern cut to the directory the pattern
// matches in (node substitutes any subpath there); a target without one is itself.
func patternDir(target string) string {
	if k := strings.IndexByte(target, '*'); k >= 0 {
		return filepath.Dir(target[:k] + "x")
	}
	return target
}

// isDir reports whether name is a directory, a symlink to one followed.
func isDir(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.IsDir()
}

// fileURLPath is the file node loads for the file: URL whose part after "file:" is rest, as
// node's URL parser and fileURLToPath read it: tabs and line breaks taken out, a backslash a
// slash, the query and fragment off, "//" and a host of "" or "localhost" off (another host
// kept, and so refused as relative: node refuses it), each %XX decoded, and the dot segments
// (".", "..", and their escaped spellings "%2e", ".%2e", "%2e%2e") taken off as text, as the
// URL parser does, not by the kernel: file:///srv/x/%2e%2e/y.mjs is /srv/y.mjs. A relative URL
// (file:x) stays relative, from the working directory, as node resolves it against it. An
// escape that is none (%zz) is kept as it is; an escaped slash (%2f), which node refuses,
// decoded like the rest, and so only refused more.
func fileURLPath(rest string) string {
	rest = strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r':
			return -1
		case '\\':
			return '/'
		}
		return r
	}, strings.TrimFunc(rest, func(r rune) bool { return r <= ' ' })) // the URL parser's C0 controls and spaces, no other white space
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		host, p, _ := strings.Cut(after, "/")
		if host != "" && !strings.EqualFold(host, "localhost") {
			return after // another host: relative, refused
		}
		rest = "/" + p
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		if rest[i] == '%' && i+2 < len(rest) && isHexDigit(rest[i+1]) && isHexDigit(rest[i+2]) {
			v, _ := strconv.ParseUint(rest[i+1:i+3], 16, 8)
			b.WriteByte(byte(v))
			i += 2
			continue
		}
		b.WriteByte(rest[i])
	}
	name := b.String()
	if name == "" {
		return "."
	}
	return filepath.Clean(name)
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// urlScheme is a URL's scheme, as node's ESM loader reads a specifier (a:b is scheme a).
var urlScheme = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`) })

// envFileVars are the NAME=VALUE assignments of a file node's --env-file reads (one a line, a
// leading "export ", # comments, the value's quotes taken off), at most 1 MiB of it.
func envFileVars(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, err
	}
	var vars []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'' || v[0] == '`') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if c := strings.Index(v, " #"); c >= 0 {
			v = strings.TrimSpace(v[:c])
		}
		vars = append(vars, strings.TrimSpace(k)+"="+v)
	}
	return vars, nil
}

// startupFiles are the files an interpreter, run with p's flags and env, reads before its
// script or commands: python's PYTHONSTARTUP (an interactive python's, which -i or
// PYTHONINSPECT make it; not with -E or -I); a shell's ENV with -i only (a POSIX shell reads
// ENV only when interactive, and a plugin's is not unless -i makes it: a non-interactive sh,
// or a #!/bin/sh plugin, leaves an ENV naming an application's file alone); with -l or
// --login, a login shell's profiles in HOME (.profile, bash's .bash_profile and .bash_login),
// with -i bash's .bashrc there; zsh's .zshenv in ZDOTDIR, or HOME, always, and its .zprofile,
// .zshrc and .zlogin with either flag. Where the plugin's environment sets no HOME (and no
// ZDOTDIR), none of those is checked: the shell reads the passwd entry's home, the agent's
// user's own.
func startupFiles(in *interpreter, p parsed, env []string) []string {
	var home, zdot, envFile, pyStartup string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME":
			home = v
		case "ZDOTDIR":
			zdot = v
		case "ENV":
			envFile = v
		case "PYTHONSTARTUP":
			pyStartup = v
		}
	}
	var files []string
	if in == &python {
		if pyStartup != "" && !p.noEnv {
			files = append(files, pyStartup)
		}
		return files
	}
	if in != &shell && in != &zsh {
		return nil
	}
	if in == &shell && envFile != "" && p.interactive {
		files = append(files, envFile)
	}
	if in == &zsh {
		if zdot == "" {
			zdot = home
		}
		if zdot == "" {
			return files
		}
		files = append(files, filepath.Join(zdot, ".zshenv"))
		if p.startup {
			for _, f := range []string{".zprofile", ".zshrc", ".zlogin"} {
				files = append(files, filepath.Join(zdot, f))
			}
		}
		return files
	}
	if !p.startup || home == "" {
		return files
	}
	for _, f := range []string{".bash_profile", ".bash_login", ".profile", ".bashrc"} {
		files = append(files, filepath.Join(home, f))
	}
	return files
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
	unset := func(k string) {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
	}
	var name string
	var rest []string
	// env's options are getopt's: grouped (-iv), -u, -C, -S and -a taking the rest of their
	// group or the next argument, the long ones (or a prefix of one alone) their value after
	// "=" or next.
	var k int
	var bad error
	// apply is env's option c (its short letter) with its value v.
	apply := func(c byte, v string) {
		switch c {
		case 'i':
			env = nil
		case 'u':
			unset(v)
		case 'C':
			wd = envChdir(wd, v)
		case 'S':
			words, err := splitString(v, env)
			if err != nil {
				bad = fmt.Errorf("command %s: not run: it is env(1), and its -S string %s cannot be read: %v: env refuses it too: write it with plain words, "+
					"'quotes', \"quotes\" and ${NAME}, or give the words as args", spec.QuoteName(command), quoteArg(v), err)
			}
			args = slices.Concat(args[:k+1], words, args[k+1:])
		}
	}
args:
	for k = 0; k < len(args); k++ {
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
				name, rest = args[k+1], args[k+2:]
			}
			break args
		case a == "-":
			env = nil // as -i
		case strings.HasPrefix(a, "--"):
			opt, v, eq := strings.Cut(a, "=")
			long, c, ok := envLongOption(opt)
			if !ok {
				return fmt.Errorf("command %s: not run: it is env(1), and its option %s is not one of env's, or is the start of more than one: "+
					"what it takes, and so which argument is the program env runs, cannot be told: spell the option out", spec.QuoteName(command), spec.QuoteName(opt))
			}
			if envTakesValue(long) && !eq {
				v = next()
			}
			apply(c, v)
		case strings.HasPrefix(a, "-"):
			for j := 1; j < len(a); j++ {
				c := a[j]
				if strings.IndexByte("uCSaP", c) < 0 {
					apply(c, "")
					continue
				}
				v := a[j+1:]
				if v == "" {
					v = next()
				}
				apply(c, v)
				break
			}
		case strings.Contains(a, "="):
			env = append(env, a)
		default:
			name, rest = a, args[k+1:]
			break args
		}
		if bad != nil {
			return bad
		}
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

// envLong are env(1)'s long options (GNU coreutils 9), by the short letter of those that act:
// the others are 0.
var envLong = map[string]byte{"--ignore-environment": 'i', "--unset": 'u', "--chdir": 'C', "--split-string": 'S', "--argv0": 'a',
	"--null": 0, "--block-signal": 0, "--default-signal": 0, "--ignore-signal": 0, "--list-signal-handling": 0,
	"--debug": 0, "--help": 0, "--version": 0}

// envLongOption is env's long option opt names as getopt_long reads it: itself, or the one it
// is a prefix of alone (--unse is --unset); ok false for none, or more than one.
func envLongOption(opt string) (long string, c byte, ok bool) {
	if c, ok := envLong[opt]; ok {
		return opt, c, true
	}
	for l := range envLong {
		if len(opt) > 2 && strings.HasPrefix(l, opt) {
			if long != "" {
				return "", 0, false
			}
			long = l
		}
	}
	return long, envLong[long], long != ""
}

// envTakesValue says whether env's long option takes a value in the next argument without
// "=" (the signal options take theirs only after "=").
func envTakesValue(long string) bool {
	return long == "--unset" || long == "--chdir" || long == "--split-string" || long == "--argv0"
}

// splitString is env -S's string split into words as GNU env splits it: at blanks outside
// quotes; 'single quotes' literal but for \\ and \'; "double quotes" and bare words with the
// backslash escapes \" \# \$ \' \\ \f \n \r \t \v, \_ (a blank between words, a space inside
// double quotes) and \c (the rest ignored); ${NAME} the value of NAME in env, the variables
// env has at that point; # at the start of a word a comment to the end. What env refuses (an
// unclosed quote, another escape, $ not in ${NAME}) is an error.
func splitString(s string, env []string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, sq, dq := false, false, false
	end := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case sq:
			if c == '\'' {
				sq = false
			} else if c == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == '\'') {
				i++
				w.WriteByte(s[i])
			} else {
				w.WriteByte(c)
			}
			continue
		case !dq && strings.IndexByte(" \t\n\v\f\r", c) >= 0:
			end()
			continue
		case !dq && !inWord && c == '#':
			end()
			return words, nil
		}
		inWord = true
		switch c {
		case '\'':
			if dq {
				w.WriteByte(c)
			} else {
				sq = true
			}
		case '"':
			dq = !dq
		case '\\':
			if i+1 == len(s) {
				return nil, errors.New("a backslash at its end")
			}
			i++
			switch e := s[i]; e {
			case '"', '#', '$', '\'', '\\':
				w.WriteByte(e)
			case '_':
				if dq {
					w.WriteByte(' ')
				} else {
					end()
				}
			case 'c':
				if dq {
					return nil, errors.New("\\c inside double quotes")
				}
				end()
				return words, nil
			case 'f', 'n', 'r', 't', 'v':
				w.WriteByte(map[byte]byte{'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}[e])
			default:
				return nil, fmt.Errorf("the escape \\%c, which env does not know", e)
			}
		case '$':
			name, ok := strings.CutPrefix(s[i:], "${")
			if ok {
				name, _, ok = strings.Cut(name, "}")
			}
			if !ok || !envVarName().MatchString(name) {
				return nil, errors.New("a $ not in ${NAME}")
			}
			i += len(name) + 2
			var val string
			for _, kv := range env {
				if v, ok := strings.CutPrefix(kv, name+"="); ok {
					val = v // the last assignment wins
				}
			}
			w.WriteString(val)
		default:
			w.WriteByte(c)
		}
	}
	if sq || dq {
		return nil, errors.New("a quote not closed")
	}
	end()
	return words, nil
}

// envVarName is a name env -S expands in ${NAME}.
var envVarName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// envChdir is the working directory env -C dir gives the program it runs, started in wd: dir
// itself, or, relative, wd's (wd unknown: relative still, which the checks refuse).
func envChdir(wd, dir string) string {
	if filepath.IsAbs(dir) || wd == "" {
		return dir
	}
	return filepath.Join(wd, dir)
}

// searchesWorkingDir says whether python, run with args and env, puts its working directory
// (the agent's, which the plugin inherits) first on its module search path: with code given
// inline (-c), a module (-m), or code from stdin, unless -I or -P, or PYTHONSAFEPATH (which -E
// and -I have it ignore), leaves it out (a script's own directory is put there instead: Source
// checks it with the script). False for another interpreter.
func (i *interpreter) searchesWorkingDir(args, env []string) bool {
	return i.searchesWorkingDirParsed(i.parse(args), env)
}

// searchesWorkingDirParsed is searchesWorkingDir of args parsed as p.
func (i *interpreter) searchesWorkingDirParsed(p parsed, env []string) bool {
	if i != &python || !p.inline || p.safePath {
		return false
	}
	if !p.noEnv {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "PYTHONSAFEPATH="); ok && v != "" {
				return false
			}
		}
	}
	return true
}
