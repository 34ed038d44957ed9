package agent

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/spec"
)

// mkdir makes dir with mode, past the umask, sticky and setgid included.
func mkdir(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startExec starts command, with env, as plugin p's exec block, and waits for it to exit;
// err is startProcess's.
func startExec(t *testing.T, command string, env map[string]string) error {
	t.Helper()
	run := t.TempDir()
	ex := &spec.Exec{Command: command}
	if env != nil {
		ex.Env = spec.Secrets(env)
	}
	p, err := startProcess(spec.Plugin{ID: "p", Socket: filepath.Join(run, "p.sock"), Exec: ex}, run, run)
	if err == nil && !p.wait(30*time.Second) {
		t.Fatal("the plugin did not exit")
	}
	return err
}

// ranBeside says whether the test program at path ran: it leaves path.ran when it does.
func ranBeside(path string) bool {
	_, err := os.Stat(path + ".ran")
	return err == nil
}

// baseDir is a temporary directory only this user may write, mode 0755 past the umask.
func baseDir(t *testing.T) string {
	t.Helper()
	b := t.TempDir()
	if err := os.Chmod(b, 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

// The agent runs a plugin's command as its own user, root most often, at every start and
// restart. A program another user may change (theirs, writable by them, in a directory they
// own or may write, or shadowed by a directory of PATH they may write, searched before the
// program's own) would run their code as root from its next start on: the agent refuses to
// run it, naming the path and what to change, and runs nothing. Before, it ran it.
func TestAgentRunsNoPluginProgramAnotherUserMayChange(t *testing.T) {
	const name = "volctl-test-plugin"
	// program writes a script that leaves name.ran beside itself when run.
	program := func(t *testing.T, dir string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\ntouch \"$0.ran\"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	start := func(t *testing.T, command string) error { return startExec(t, command, nil) }
	ran := ranBeside

	tests := []struct {
		name string
		// setup makes the program in base and returns the command, and the path and the words
		// the refusal must name.
		setup func(t *testing.T, base string) (command, path, why string)
	}{
		{"writable by other users", func(t *testing.T, base string) (string, string, string) {
			p := program(t, mkdir(t, filepath.Join(base, "bin"), 0o755), 0o777)
			return p, p, "is writable by other users (mode 0777)"
		}},
		{"group-writable for another group", func(t *testing.T, base string) (string, string, string) {
			p := program(t, mkdir(t, filepath.Join(base, "bin"), 0o755), 0o775)
			if err := os.Chown(p, -1, 4242); err != nil {
				t.Skipf("giving the program another group needs root: %v", err)
			}
			return p, p, "is writable by other users (mode 0775)"
		}},
		{"another user's", func(t *testing.T, base string) (string, string, string) {
			p := program(t, mkdir(t, filepath.Join(base, "bin"), 0o755), 0o755)
			if err := os.Chown(p, 4242, -1); err != nil {
				t.Skipf("giving the program another owner needs root: %v", err)
			}
			return p, p, "is owned by uid 4242"
		}},
		{"in a directory other users may write", func(t *testing.T, base string) (string, string, string) {
			dir := mkdir(t, filepath.Join(base, "bin"), 0o777)
			return program(t, dir, 0o755), dir, "is writable by other users (mode 0777)"
		}},
		{"through a symlink to one writable by other users", func(t *testing.T, base string) (string, string, string) {
			p := program(t, mkdir(t, filepath.Join(base, "real"), 0o755), 0o777)
			link := filepath.Join(mkdir(t, filepath.Join(base, "bin"), 0o755), "plugin")
			if err := os.Symlink(p, link); err != nil {
				t.Fatal(err)
			}
			return link, p, "is writable by other users (mode 0777)"
		}},
		{"a relative path, from a working directory other users may write", func(t *testing.T, base string) (string, string, string) {
			open := mkdir(t, filepath.Join(base, "open"), 0o777)
			program(t, mkdir(t, filepath.Join(open, "bin"), 0o755), 0o755)
			t.Chdir(open)
			return filepath.Join("bin", name), open, "is writable by other users (mode 0777)"
		}},
		{"a name whose PATH searches a directory other users may write first", func(t *testing.T, base string) (string, string, string) {
			open := mkdir(t, filepath.Join(base, "open"), 0o777)
			bin := mkdir(t, filepath.Join(base, "bin"), 0o755)
			program(t, bin, 0o755)
			t.Setenv("PATH", open+":"+bin+":/usr/bin:/bin")
			return name, open, "is writable by other users (mode 0777)"
		}},
		{"a name whose PATH searches a sticky directory first", func(t *testing.T, base string) (string, string, string) {
			open := mkdir(t, filepath.Join(base, "tmp"), 0o777|os.ModeSticky)
			bin := mkdir(t, filepath.Join(base, "bin"), 0o755)
			program(t, bin, 0o755)
			t.Setenv("PATH", open+":"+bin+":/usr/bin:/bin")
			return name, open, "is writable by other users (mode 01777)"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := baseDir(t)
			command, path, why := tt.setup(t, base)
			err := start(t, command)
			if err == nil {
				t.Fatalf("the agent ran %s, which another user may change (%s %s), as uid %d; want it refused", command, path, why, os.Geteuid())
			}
			fix := "chmod go-w"
			if !strings.Contains(command, "/") {
				fix = "take that directory out of the agent's PATH"
			}
			for _, want := range []string{"command " + command, path + " " + why, "not run", fix} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to say %q", err, want)
				}
			}
			if ran(filepath.Join(base, "bin", name)) || ran(filepath.Join(base, "real", name)) || ran(filepath.Join(base, "open", "bin", name)) {
				t.Error("the program ran")
			}
		})
	}

	// Nothing else is refused: a program of root's (or this user's) in directories only they
	// may write, found by its path or in a PATH of such directories only, runs.
	t.Run("a program only this user may change", func(t *testing.T) {
		base := baseDir(t)
		bin := mkdir(t, filepath.Join(base, "bin"), 0o755)
		p := program(t, bin, 0o755)
		if err := start(t, p); err != nil {
			t.Fatal(err)
		}
		if !ran(p) {
			t.Error("the program did not run")
		}
		if err := os.Remove(p + ".ran"); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", mkdir(t, filepath.Join(base, "empty"), 0o755)+":"+bin+":"+filepath.Join(base, "missing")+":/usr/bin:/bin")
		if err := start(t, name); err != nil {
			t.Fatal(err)
		}
		if !ran(p) {
			t.Error("the program found in PATH did not run")
		}
	})
}

// What the agent runs for a script is its #! interpreter too, and a name looked up in a
// directory of PATH that does not exist yet is found wherever another user makes it: the agent
// refuses both, naming what to change, and runs nothing. Before, each ran: alice's python, the
// program env found in a directory others may write of the plugin's PATH, a program planted in
// /tmp/x/bin. A directory a group of root alone may write (Debian's root:staff 2775
// /usr/local/bin) is root's: its program runs, where before it was refused.
func TestAgentRunsNoScriptWhoseInterpreterAnotherUserMayChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory another owner or group needs root")
	}
	const name = "volctl-test-plugin"
	write := func(t *testing.T, p, content string) string {
		t.Helper()
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	start := startExec
	const body = "touch \"$0.ran\"\n"
	tests := []struct {
		name string
		// setup returns the command, its env, the file whose .ran says it ran, and what the
		// refusal must say.
		setup func(t *testing.T, base string) (command string, env map[string]string, ran string, want []string)
	}{
		{"a script whose interpreter is in another user's directory", func(t *testing.T, base string) (string, map[string]string, string, []string) {
			alice := mkdir(t, filepath.Join(base, "alice"), 0o755)
			if err := os.Symlink("/bin/sh", filepath.Join(alice, "sh")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(alice, 4242, 4242); err != nil {
				t.Fatal(err)
			}
			p := write(t, filepath.Join(base, "bin", name), "#!"+filepath.Join(alice, "sh")+"\n"+body)
			return p, nil, p, []string{alice + " is owned by uid 4242", "the interpreter the #! line of the script " + p + " names", "chmod go-w"}
		}},
		// The plugin's PATH is filtered before the check (trustedPATH): a directory others may
		// write in it is left out, never searched (TestEnvScriptIsCheckedOnThePATHThePluginGets).
		// The PATH env -S sets is the script's own, past any filter.
		{"a script whose env looks its interpreter up in a PATH others may write", func(t *testing.T, base string) (string, map[string]string, string, []string) {
			open := mkdir(t, filepath.Join(base, "open"), 0o777)
			if err := os.Symlink("/bin/sh", filepath.Join(base, "bin", "volctl-test-sh")); err != nil {
				t.Fatal(err)
			}
			p := write(t, filepath.Join(base, "bin", name), "#!/usr/bin/env -S PATH="+open+":"+filepath.Join(base, "bin")+":/usr/bin:/bin volctl-test-sh\n"+body)
			return p, nil, p, []string{"its script " + p + " has env run volctl-test-sh", open + " is writable by other users (mode 0777)", "take that directory out of the plugin's PATH"}
		}},
		{"a name whose PATH searches a directory not made yet, in a sticky one", func(t *testing.T, base string) (string, map[string]string, string, []string) {
			tmp := mkdir(t, filepath.Join(base, "tmp"), 0o777|os.ModeSticky)
			p := write(t, filepath.Join(base, "bin", name), "#!/bin/sh\n"+body)
			missing := filepath.Join(tmp, "x", "bin")
			t.Setenv("PATH", missing+":"+filepath.Join(base, "bin")+":/usr/bin:/bin")
			return name, nil, p, []string{missing + " does not exist, and " + tmp + ", where another user could make it, is writable by other users (mode 01777)", "take that directory out of the agent's PATH"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := baseDir(t)
			mkdir(t, filepath.Join(base, "bin"), 0o755)
			command, env, ran, want := tt.setup(t, base)
			err := start(t, command, env)
			if err == nil {
				t.Fatalf("the agent ran %s, whose program another user may change (%s), as uid %d; want it refused", command, want[0], os.Geteuid())
			}
			for _, w := range append([]string{"command " + command, "not run"}, want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
			if _, err := os.Stat(ran + ".ran"); err == nil {
				t.Error("the program ran")
			}
		})
	}

	t.Run("a directory a group of root alone may write", func(t *testing.T) {
		accounts := t.TempDir()
		for v, content := range map[*string]string{&pathtrust.GroupFile: "root:x:0:\nstaff:x:4243:root\n", &pathtrust.PasswdFile: "root:x:0:0:root:/root:/bin/sh\n", &pathtrust.GshadowFile: "staff:*::\n"} {
			p := write(t, filepath.Join(accounts, filepath.Base(*v)), content)
			old := *v
			*v = p
			t.Cleanup(func() { *v = old })
		}
		base := baseDir(t)
		bin := mkdir(t, filepath.Join(base, "bin"), os.ModeSetgid|0o775)
		if err := os.Chown(bin, 0, 4243); err != nil {
			t.Fatal(err)
		}
		p := write(t, filepath.Join(bin, name), "#!/bin/sh\n"+body)
		t.Setenv("PATH", bin+":/usr/bin:/bin")
		for _, command := range []string{p, name} {
			if err := start(t, command, nil); err != nil {
				t.Fatalf("%s: %v; want it run: only root is in the group that may write %s", command, err, bin)
			}
			if err := os.Remove(p + ".ran"); err != nil {
				t.Errorf("%s did not run: %v", command, err)
			}
		}
	})
}

// `#!/usr/bin/env NAME` run with PATH set empty (an exec block's env = { PATH = "" }, or an
// agent started with `env -i PATH=`) makes env(1) look NAME up in the working directory alone,
// as execvp(3) does: the check searched no directory at all then, and passed a script whose
// NAME any user who may write the agent's working directory could put there. Before, the
// script was started; now the working directory is checked as that PATH's one entry.
func TestScriptWhoseEnvSearchesAnEmptyPATHIsCheckedInTheWorkingDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a directory of root's beside one anyone may write: the check passes root's own only when run as root")
	}
	base := t.TempDir()
	bin := mkdir(t, filepath.Join(base, "bin"), 0o755)
	open := mkdir(t, filepath.Join(base, "open"), 0o777)
	script := filepath.Join(bin, "plugin")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env volctl-test-r27\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(open)
	err := untrustedProgram(script, script, []string{"PATH="})
	if err == nil || !strings.Contains(err.Error(), open) {
		t.Errorf("script %s with PATH= run from %s (mode 0777): %v; want it refused naming %s, where env would look volctl-test-r27 up", script, open, err, open)
	}
	if err := untrustedProgram(script, script, nil); err != nil {
		t.Errorf("the same script with no PATH at all (env searches %s): %v, want it run", "/bin:/usr/bin", err)
	}
}

// An ELF plugin's code is also what its dynamic loader loads: its PT_INTERP, and the shared
// libraries it finds in the directories the program's RUNPATH (or RPATH) names. A directory
// there that another user may write, or make, or a relative one (the plugin's working
// directory) lets them put a libc.so.6 there that runs in the plugin as the agent's user. The
// agent refuses to run such a program, naming it, the entry and the directory. Before, it ran
// it: the program's own path passed, and its dynamic section was never read.
func TestAgentRunsNoProgramWhoseLibrariesAnotherUserMayChange(t *testing.T) {
	// build links the program in dir with the linker flags, and returns its path.
	build := func(t *testing.T, dir string, ldflags ...string) string {
		t.Helper()
		out := filepath.Join(dir, "volctl-test-plugin")
		ccBuild(t, out, ranSource, ldflags...)
		return out
	}
	start := func(t *testing.T, command string) error { return startExec(t, command, nil) }
	ran, base := ranBeside, baseDir
	for _, tt := range []struct {
		name string
		// setup builds the program under b and returns the entry and the path and words the
		// refusal must name.
		setup func(t *testing.T, b string) (prog, entry, path, why string)
	}{
		{"a RUNPATH directory other users may write", func(t *testing.T, b string) (string, string, string, string) {
			open := mkdir(t, filepath.Join(b, "lib"), 0o777)
			p := build(t, mkdir(t, filepath.Join(b, "bin"), 0o755), "-Wl,--enable-new-dtags,-rpath,"+open)
			return p, "RUNPATH " + open, open, "is writable by other users (mode 0777)"
		}},
		{"an RPATH $ORIGIN/../lib other users may write", func(t *testing.T, b string) (string, string, string, string) {
			open := mkdir(t, filepath.Join(b, "lib"), 0o777)
			p := build(t, mkdir(t, filepath.Join(b, "bin"), 0o755), "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../lib")
			return p, "RPATH $ORIGIN/../lib", open, "is writable by other users (mode 0777)"
		}},
		{"a RUNPATH directory not made yet, in a sticky one", func(t *testing.T, b string) (string, string, string, string) {
			missing := filepath.Join(mkdir(t, filepath.Join(b, "tmp"), 0o777|os.ModeSticky), "lib")
			p := build(t, mkdir(t, filepath.Join(b, "bin"), 0o755), "-Wl,--enable-new-dtags,-rpath,"+missing)
			return p, "RUNPATH " + missing, missing, "does not exist"
		}},
		{"a relative RUNPATH", func(t *testing.T, b string) (string, string, string, string) {
			p := build(t, mkdir(t, filepath.Join(b, "bin"), 0o755), "-Wl,--enable-new-dtags,-rpath,lib")
			return p, "RUNPATH lib", "lib", "is relative"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := base(t)
			prog, entry, path, why := tt.setup(t, b)
			err := start(t, prog)
			if err == nil {
				t.Fatalf("the agent ran %s, whose %s another user controls (%s %s), as uid %d; want it refused", prog, entry, path, why, os.Geteuid())
			}
			for _, want := range []string{"command " + prog, "not run", "ELF program " + prog, entry, path + " " + why, "patchelf --remove-rpath"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to say %q", err, want)
				}
			}
			if ran(prog) {
				t.Error("the program ran")
			}
		})
	}
	t.Run("a RUNPATH only this user may change", func(t *testing.T) {
		b := base(t)
		lib := mkdir(t, filepath.Join(b, "lib"), 0o755)
		p := build(t, mkdir(t, filepath.Join(b, "bin"), 0o755), "-Wl,--enable-new-dtags,-rpath,"+lib+":$ORIGIN/../lib")
		if err := start(t, p); err != nil {
			t.Fatal(err)
		}
		if !ran(p) {
			t.Error("the program did not run")
		}
	})
}

// The plugin's environment names code too: LD_PRELOAD, LD_AUDIT and LD_LIBRARY_PATH are what
// ld.so loads into it, GCONV_PATH what iconv does, LOCPATH, a locale or TZ named by its path
// what the C library reads. None passes from the agent's environment, but the exec block's env
// may set them (and the agent's locale and TZ pass): one naming a file or directory another
// user controls (writable by them, not made yet where they may make it, or relative: the
// plugin's working directory) would have their library run in the plugin as root. The agent
// refuses to run it, naming the variable and the path, never the value. Before, it ran it.
func TestAgentRunsNoPluginWhoseEnvironmentLoadsWhatAnotherUserMayChange(t *testing.T) {
	start := func(t *testing.T, b string, env map[string]string) (string, error) {
		t.Helper()
		prog := filepath.Join(b, "volctl-test-plugin")
		if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch \"$0.ran\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return prog, startExec(t, prog, env)
	}
	ran, base := ranBeside, baseDir
	// inOpen sets the variable k to value(open), open a directory other users may write.
	inOpen := func(k string, value func(open string) string) func(*testing.T, string) (map[string]string, string, string, string) {
		return func(t *testing.T, b string) (map[string]string, string, string, string) {
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			return map[string]string{k: value(open)}, k, open, "is writable by other users (mode 0777)"
		}
	}
	for _, tt := range []struct {
		name string
		// setup returns the exec env, and the variable, the path and the words the refusal must name.
		setup func(t *testing.T, b string) (env map[string]string, name, path, why string)
	}{
		{"LD_PRELOAD of a library in a directory other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			lib := filepath.Join(open, "evil.so")
			if err := os.WriteFile(lib, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"LD_PRELOAD": "libc.so.6 " + lib}, "LD_PRELOAD", open, "is writable by other users (mode 0777)"
		}},
		{"LD_LIBRARY_PATH with a directory other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			ok := mkdir(t, filepath.Join(b, "ok"), 0o755)
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			return map[string]string{"LD_LIBRARY_PATH": ok + ":" + open}, "LD_LIBRARY_PATH", open, "is writable by other users (mode 0777)"
		}},
		{"LD_LIBRARY_PATH ending in an empty entry", func(t *testing.T, b string) (map[string]string, string, string, string) {
			ok := mkdir(t, filepath.Join(b, "ok"), 0o755)
			return map[string]string{"LD_LIBRARY_PATH": ok + ":"}, "LD_LIBRARY_PATH", ".", "is relative"
		}},
		// ld.so splits on colons and semicolons alike, and searches the working directory for
		// an empty entry between them; the JVM does for an empty CLASSPATH entry.
		{"LD_LIBRARY_PATH with an empty entry between a colon and a semicolon", func(t *testing.T, b string) (map[string]string, string, string, string) {
			return map[string]string{"LD_LIBRARY_PATH": "/usr/lib:;/usr/lib64"}, "LD_LIBRARY_PATH", ".", "is relative"
		}},
		{"LD_LIBRARY_PATH with an empty entry between semicolons", func(t *testing.T, b string) (map[string]string, string, string, string) {
			return map[string]string{"LD_LIBRARY_PATH": "/usr/lib;;/usr/lib64"}, "LD_LIBRARY_PATH", ".", "is relative"
		}},
		// A colon alone is two empty entries (LD_DEBUG=libs shows ld.so searching
		// glibc-hwcaps/x86-64-v3/, a relative path), unlike an empty variable (below).
		{"LD_LIBRARY_PATH of a colon alone", func(t *testing.T, b string) (map[string]string, string, string, string) {
			return map[string]string{"LD_LIBRARY_PATH": ":"}, "LD_LIBRARY_PATH", ".", "is relative"
		}},
		{"CLASSPATH ending in an empty entry", func(t *testing.T, b string) (map[string]string, string, string, string) {
			return map[string]string{"CLASSPATH": "/usr/share/java/x.jar:"}, "CLASSPATH", ".", "is relative"
		}},
		{"CLASSPATH with an empty entry inside", func(t *testing.T, b string) (map[string]string, string, string, string) {
			return map[string]string{"CLASSPATH": "/usr/share/java/x.jar::/usr/share/java/y.jar"}, "CLASSPATH", ".", "is relative"
		}},
		{"LD_AUDIT of a library another user could make", func(t *testing.T, b string) (map[string]string, string, string, string) {
			lib := filepath.Join(mkdir(t, filepath.Join(b, "tmp"), 0o777|os.ModeSticky), "audit.so")
			return map[string]string{"LD_AUDIT": lib}, "LD_AUDIT", lib, "does not exist"
		}},
		{"GCONV_PATH with a directory other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			return map[string]string{"GCONV_PATH": open}, "GCONV_PATH", open, "is writable by other users (mode 0777)"
		}},
		{"a locale named by a path other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			return map[string]string{"LC_ALL": filepath.Join(open, "loc")}, "LC_ALL", open, "is writable by other users (mode 0777)"
		}},
		{"a time zone file other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			return map[string]string{"TZ": ":" + filepath.Join(open, "zone")}, "TZ", open, "is writable by other users (mode 0777)"
		}},
		{"BASH_ENV naming a file in a directory other users may write", inOpen("BASH_ENV", func(open string) string { return filepath.Join(open, "rc") })},
		{"PYTHONPATH with a directory other users may write", inOpen("PYTHONPATH", func(open string) string { return "/usr/lib/python3:" + open })},
		{"PYTHONHOME in a directory other users may write", inOpen("PYTHONHOME", func(open string) string { return open })},
		{"PERL5LIB with a directory other users may write", inOpen("PERL5LIB", func(open string) string { return open })},
		{"PERL5OPT -I of a directory other users may write", inOpen("PERL5OPT", func(open string) string { return "-w -I" + open })},
		{"RUBYOPT -I of a directory other users may write", inOpen("RUBYOPT", func(open string) string { return "-I " + open })},
		{"PERLLIB with a directory other users may write", inOpen("PERLLIB", func(open string) string { return "/usr/share/perl5:" + open })},
		{"PYTHONUSERBASE a directory other users may write", inOpen("PYTHONUSERBASE", func(open string) string { return open })},
		{"PERL5OPT -Mlib= of a directory other users may write", inOpen("PERL5OPT", func(open string) string { return "-w -Mlib=/usr/share/perl5," + open })},
		{"RUBYOPT -r of a file in a directory other users may write", inOpen("RUBYOPT", func(open string) string { return "-W0 -r" + filepath.Join(open, "x.rb") })},
		{"RUBYLIB with a directory other users may write", inOpen("RUBYLIB", func(open string) string { return open })},
		{"NODE_PATH with a directory other users may write", inOpen("NODE_PATH", func(open string) string { return open })},
		{"NODE_OPTIONS --require of a module in a directory other users may write", inOpen("NODE_OPTIONS", func(open string) string { return "--max-old-space-size=64 --require " + filepath.Join(open, "x.js") })},
		{"TZDIR a directory other users may write", inOpen("TZDIR", func(open string) string { return open })},
		{"JAVA_TOOL_OPTIONS -javaagent: of a jar in a directory other users may write", inOpen("JAVA_TOOL_OPTIONS", func(open string) string { return "-Xmx64m -javaagent:" + filepath.Join(open, "agent.jar") + "=debug" })},
		{"_JAVA_OPTIONS -agentpath: of a library in a directory other users may write", inOpen("_JAVA_OPTIONS", func(open string) string { return "-agentpath:" + filepath.Join(open, "libagent.so") })},
		{"JDK_JAVA_OPTIONS -Xbootclasspath/a: with a directory other users may write", inOpen("JDK_JAVA_OPTIONS", func(open string) string { return "-Xbootclasspath/a:/usr/share/java/x.jar:" + open })},
		{"JAVA_TOOL_OPTIONS -Djava.library.path= with a directory other users may write", inOpen("JAVA_TOOL_OPTIONS", func(open string) string { return "-Djava.library.path=" + open })},
		{"JDK_JAVA_OPTIONS --class-path of a directory other users may write", inOpen("JDK_JAVA_OPTIONS", func(open string) string { return "--class-path " + open })},
		{"CLASSPATH with a directory other users may write", inOpen("CLASSPATH", func(open string) string { return "/usr/share/java/x.jar:" + filepath.Join(open, "*") })},
		{"LUA_PATH with a template in a directory other users may write", inOpen("LUA_PATH", func(open string) string { return "/usr/share/lua/5.4/?.lua;" + filepath.Join(open, "?.lua") + ";;" })},
		{"LUA_CPATH_5_4 with a template in a directory other users may write", inOpen("LUA_CPATH_5_4", func(open string) string { return filepath.Join(open, "?", "core.so") })},
		{"LUA_PATH with a template in the working directory", func(t *testing.T, b string) (map[string]string, string, string, string) {
			return map[string]string{"LUA_PATH": "/usr/share/lua/5.4/?.lua;./?.lua"}, "LUA_PATH", ".", "is relative"
		}},
		{"LUA_INIT running a file in a directory other users may write", inOpen("LUA_INIT", func(open string) string { return "@" + filepath.Join(open, "init.lua") })},
		{"OPENSSL_CONF a file in a directory other users may write", inOpen("OPENSSL_CONF", func(open string) string { return filepath.Join(open, "openssl.cnf") })},
		{"OPENSSL_MODULES a directory other users may write", inOpen("OPENSSL_MODULES", func(open string) string { return open })},
		{"OPENSSL_ENGINES a directory other users may write", inOpen("OPENSSL_ENGINES", func(open string) string { return open })},
		{"SSL_CERT_FILE a file in a directory other users may write", inOpen("SSL_CERT_FILE", func(open string) string { return filepath.Join(open, "ca.pem") })},
		{"SSL_CERT_DIR with a directory other users may write", inOpen("SSL_CERT_DIR", func(open string) string { return "/etc/ssl/certs:" + open })},
		{"NODE_EXTRA_CA_CERTS a file in a directory other users may write", inOpen("NODE_EXTRA_CA_CERTS", func(open string) string { return filepath.Join(open, "ca.pem") })},
		{"REQUESTS_CA_BUNDLE a file in a directory other users may write", inOpen("REQUESTS_CA_BUNDLE", func(open string) string { return filepath.Join(open, "ca.pem") })},
		{"CURL_CA_BUNDLE a file in a directory other users may write", inOpen("CURL_CA_BUNDLE", func(open string) string { return filepath.Join(open, "ca.pem") })},
		{"PYTHONPYCACHEPREFIX a directory other users may write", inOpen("PYTHONPYCACHEPREFIX", func(open string) string { return open })},
		{"GEM_PATH with a directory other users may write", inOpen("GEM_PATH", func(open string) string { return "/var/lib/gems/3.1.0:" + open })},
		{"GEM_HOME a directory other users may write", inOpen("GEM_HOME", func(open string) string { return open })},
		{"GIT_EXEC_PATH a directory other users may write", inOpen("GIT_EXEC_PATH", func(open string) string { return open })},
		{"GIT_SSH a program in a directory other users may write", inOpen("GIT_SSH", func(open string) string { return filepath.Join(open, "ssh") })},
		{"GIT_ASKPASS a program in a directory other users may write", inOpen("GIT_ASKPASS", func(open string) string { return filepath.Join(open, "askpass") })},
		{"GIT_ASKPASS a bare name found in the plugin's PATH, writable by other users", func(t *testing.T, b string) (map[string]string, string, string, string) {
			bin := mkdir(t, filepath.Join(b, "bin"), 0o755)
			prog := filepath.Join(bin, "askpass")
			if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(prog, 0o777); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"PATH": bin + ":/usr/bin:/bin", "GIT_ASKPASS": "askpass"}, "GIT_ASKPASS", prog, "is writable by other users (mode 0777)"
		}},
		{"SSH_ASKPASS a script whose interpreter other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			interp := filepath.Join(open, "sh")
			prog := filepath.Join(mkdir(t, filepath.Join(b, "bin"), 0o755), "askpass")
			if err := os.WriteFile(prog, []byte("#!"+interp+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"SSH_ASKPASS": prog}, "SSH_ASKPASS", open, "is writable by other users (mode 0777)"
		}},
		{"GIT_SSL_CAINFO a file in a directory other users may write", inOpen("GIT_SSL_CAINFO", func(open string) string { return filepath.Join(open, "ca.pem") })},
		{"GIT_SSL_CAPATH a directory other users may write", inOpen("GIT_SSL_CAPATH", func(open string) string { return open })},
		{"AWS_CA_BUNDLE a file in a directory other users may write", inOpen("AWS_CA_BUNDLE", func(open string) string { return filepath.Join(open, "ca.pem") })},
		{"AWS_CONFIG_FILE a file in a directory other users may write", inOpen("AWS_CONFIG_FILE", func(open string) string { return filepath.Join(open, "config") })},
		{"AWS_SHARED_CREDENTIALS_FILE ~/ in a HOME other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			return map[string]string{"HOME": open, "AWS_SHARED_CREDENTIALS_FILE": "~/credentials"}, "AWS_SHARED_CREDENTIALS_FILE", open, "is writable by other users (mode 0777)"
		}},
		{"KUBECONFIG with a file in a directory other users may write", inOpen("KUBECONFIG", func(open string) string { return "/etc/kubernetes/admin.conf:" + filepath.Join(open, "config") })},
		{"GOOGLE_APPLICATION_CREDENTIALS a file in a directory other users may write", inOpen("GOOGLE_APPLICATION_CREDENTIALS", func(open string) string { return filepath.Join(open, "sa.json") })},
		{"JAVA_TOOL_OPTIONS -Djavax.net.ssl.trustStore= in a directory other users may write", inOpen("JAVA_TOOL_OPTIONS", func(open string) string { return "-Djavax.net.ssl.trustStore=" + filepath.Join(open, "cacerts") })},
		{"GIT_CONFIG_GLOBAL a file in a directory other users may write", inOpen("GIT_CONFIG_GLOBAL", func(open string) string { return filepath.Join(open, "gitconfig") })},
		{"GIT_TEMPLATE_DIR a directory other users may write", inOpen("GIT_TEMPLATE_DIR", func(open string) string { return open })},
		{"LD_PROFILE_OUTPUT a directory other users may write", inOpen("LD_PROFILE_OUTPUT", func(open string) string { return open })},
		{"a relative TZ whose .. leaves the time zone directory", inOpen("TZ", func(open string) string { return ":../../.." + filepath.Join(open, "zone") })},
		{"LD_LIBRARY_PATH with a $LIB other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			mkdir(t, filepath.Join(b, "arch"), 0o755)
			open := mkdir(t, filepath.Join(b, "arch", "lib"), 0o777)
			return map[string]string{"LD_LIBRARY_PATH": filepath.Join(b, "arch", "$LIB")}, "LD_LIBRARY_PATH", open, "is writable by other users (mode 0777)"
		}},
		{"LD_PRELOAD of a library in a $LIB other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			mkdir(t, filepath.Join(b, "arch"), 0o755)
			open := mkdir(t, filepath.Join(b, "arch", "lib64"), 0o777)
			return map[string]string{"LD_PRELOAD": filepath.Join(b, "arch", "$LIB", "libhook.so")}, "LD_PRELOAD", open, "is writable by other users (mode 0777)"
		}},
		{"LD_AUDIT of a library in a ${PLATFORM} other users may write", func(t *testing.T, b string) (map[string]string, string, string, string) {
			mkdir(t, filepath.Join(b, "arch"), 0o755)
			open := mkdir(t, filepath.Join(b, "arch", "haswell"), 0o777)
			return map[string]string{"LD_AUDIT": filepath.Join(b, "arch", "${PLATFORM}", "libaudit.so")}, "LD_AUDIT", open, "is writable by other users (mode 0777)"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := base(t)
			env, name, path, why := tt.setup(t, b)
			prog, err := start(t, b, env)
			if err == nil {
				t.Fatalf("the agent ran %s with %v, whose %s another user controls (%s %s), as uid %d; want it refused", prog, env, name, path, why, os.Geteuid())
			}
			for _, want := range []string{"command " + prog, "not run", "environment's " + name, path + " " + why, "out of the exec block's env"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to say %q", err, want)
				}
			}
			if v := env[name]; strings.Contains(v, " ") && strings.Contains(err.Error(), v) {
				t.Errorf("err = %v\nit prints the exec env's value %q", err, v)
			}
			if ran(prog) {
				t.Error("the program ran")
			}
		})
	}
	// bash expands BASH_ENV (parameters, command substitution) before it runs the file: what it
	// names cannot be told from the value.
	t.Run("a BASH_ENV the shell expands", func(t *testing.T) {
		b := base(t)
		prog, err := start(t, b, map[string]string{"BASH_ENV": "$(id)"})
		if err == nil || !strings.Contains(err.Error(), "BASH_ENV holds what the shell expands") || strings.Contains(err.Error(), "$(id)") {
			t.Errorf("BASH_ENV=$(id): %v, want a refusal naming BASH_ENV, not its value", err)
		}
		if ran(prog) {
			t.Error("the program ran")
		}
	})
	// What names nothing the plugin loads is no reason to refuse it: sh reads ENV only when
	// interactive (a plugin is not), and bash and glibc take an empty BASH_ENV or TZDIR as unset;
	// so does ld.so an empty LD_LIBRARY_PATH (_dl_init_paths reads none of an empty one:
	// LD_DEBUG=libs shows no LD_LIBRARY_PATH search), where one empty entry among others is the
	// working directory (above).
	for _, env := range []map[string]string{{"ENV": "production"}, {"BASH_ENV": ""}, {"TZDIR": ""}, {"HOSTALIASES": ""}, {"LD_LIBRARY_PATH": ""}, {"RUBYOPT": "-rjson -W0"},
		{"JAVA_TOOL_OPTIONS": "-Xmx64m -Dfile.encoding=UTF-8 -agentlib:jdwp=transport=dt_socket,server=y -javaagent:/usr/share/java/agent.jar=x"},
		{"LUA_PATH": "/usr/share/lua/5.4/?.lua;/usr/share/lua/5.4/?/init.lua;;", "LUA_INIT": "print('a plugin') -- code, not a path"},
		{"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "SSL_CERT_DIR": "/etc/ssl/certs", "OPENSSL_CONF": "/etc/ssl/openssl.cnf"},
		{"CLASSPATH": "/usr/share/java/*", "GEM_PATH": "", "PYTHONSTARTUP": "/tmp/only-an-interactive-python-reads-it.py"},
		// git and ssh look a bare name up in PATH: the plugin's, which holds only root's directories.
		{"GIT_SSH": "ssh", "GIT_ASKPASS": "git-askpass", "SSH_ASKPASS": "ssh-askpass"},
		{"HOME": "/root", "AWS_CONFIG_FILE": "~/.aws/config", "KUBECONFIG": "/etc/kubernetes/admin.conf"}} {
		t.Run(fmt.Sprintf("a plugin run with %v", env), func(t *testing.T) {
			b := base(t)
			prog, err := start(t, b, env)
			if err != nil {
				t.Fatalf("the agent refused %s with %v, which names nothing it loads or reads: %v", prog, env, err)
			}
			if !ran(prog) {
				t.Error("the program did not run")
			}
		})
	}
	// node resolves a --require of a module named without a leading slash, a bare name too,
	// from the working directory's node_modules: refused, saying to name it by its path.
	t.Run("NODE_OPTIONS --require of a module named without a path", func(t *testing.T) {
		b := base(t)
		prog, err := start(t, b, map[string]string{"NODE_OPTIONS": "--require dd-trace/init"})
		if err == nil || !strings.Contains(err.Error(), "environment's NODE_OPTIONS") || !strings.Contains(err.Error(), "name it by its absolute path") {
			t.Errorf("NODE_OPTIONS=--require dd-trace/init: %v, want a refusal naming NODE_OPTIONS and saying to name the module by its absolute path", err)
		}
		if ran(prog) {
			t.Error("the program ran")
		}
	})
	t.Run("an environment only this user may change", func(t *testing.T) {
		b := base(t)
		ok := mkdir(t, filepath.Join(b, "ok"), 0o755)
		prog, err := start(t, b, map[string]string{"LD_LIBRARY_PATH": ok, "LD_PRELOAD": "libc.so.6 /usr/$LIB/libc.so.6", "TZ": "Europe/Paris", "LANG": "C.UTF-8", "GCONV_PATH": ok})
		if err != nil {
			t.Fatal(err)
		}
		if !ran(prog) {
			t.Error("the program did not run")
		}
	})
}

// TestPluginStartsWithVolctlsCoreLimit: root's volctl lowers its own core size limit to 1 to
// keep its secrets out of a core (cli.KeepSecretsOutOfCoreDumps); a plugin it starts is a
// third party's program whose cores its operator wants as before: it gets the limit volctl was
// started with, not volctl's lowered one.
func TestPluginStartsWithVolctlsCoreLimit(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil {
		t.Fatal(err)
	}
	// A finite limit other than this process's own, so that the plugin's shows where it came
	// from whatever the limit here (unlimited in many containers).
	want := unix.Rlimit{Cur: 1 << 20, Max: lim.Max}
	if lim.Cur == want.Cur {
		want.Cur = 2 << 20
	}
	if want.Max != unix.RLIM_INFINITY && want.Max < want.Cur {
		if os.Geteuid() != 0 {
			t.Skipf("RLIMIT_CORE's hard limit is %d, under %d, and only root may raise it", lim.Max, want.Cur)
		}
		want.Max = want.Cur
	}
	SetPluginCoreLimit(want)
	t.Cleanup(func() { pluginCoreLimit = nil })
	dir := baseDir(t)
	out, script := filepath.Join(dir, "limit"), filepath.Join(dir, "volctl-test-plugin")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ngrep '^Max core file size' /proc/$$/limits > "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := startExec(t, script, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(b)); len(f) < 5 || f[4] != fmt.Sprint(want.Cur) {
		t.Errorf("the plugin's core size limit: %q, want its soft limit %d, the one volctl was started with, not this process's %d", b, want.Cur, lim.Cur)
	}
}

// ranSource is a C program that leaves argv[0].ran when it runs (ranBeside).
const ranSource = "#include <stdio.h>\nint main(int argc, char **argv) { char p[4096]; FILE *f;\n" +
	"snprintf(p, sizeof p, \"%s.ran\", argv[0]); if ((f = fopen(p, \"w\"))) fclose(f); return 0; }\n"

// ccBuild compiles the C source to out with cc and the extra arguments (linker flags, libraries),
// skipping the test, saying why, where there is no C compiler or it fails.
func ccBuild(t *testing.T, out, source string, args ...string) {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("building a program with the dynamic section this test needs takes a C compiler (cc): %v", err)
	}
	src := filepath.Join(t.TempDir(), "prog.c")
	if err := os.WriteFile(src, []byte(source), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"-o", out, src}, args...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Skipf("cc %v: %v: %s", args, err, b)
	}
}

// What ld.so loads is more than the RUNPATH's directories: a NEEDED entry naming a path (linked
// as `cc m.c /dir/libfoo.so`) is loaded from there; a library found in a RUNPATH directory root
// keeps may itself be writable by others; $LIB is two names on Debian's multiarch
// (lib/x86_64-linux-gnu); ld.so searches each directory's glibc-hwcaps/x86-64-v2..v4 and
// tls/... subdirectories before it; and a program stripped of its section headers (sstrip)
// still has its dynamic table, which ld.so reads through the program headers. Each was run,
// as the agent's user, with another user's library in reach. Now each is refused, naming the
// program, the entry and the path; a program whose headers cannot be read so (a PT_INTERP
// longer than a path) is refused too, and its size never allocated.
func TestAgentRunsNoProgramWhoseLoaderFindsWhatAnotherUserMayChange(t *testing.T) {
	const libSource = "int volctl_test_lib(void) { return 0; }\n"
	const progSource = ranSource + "int volctl_test_lib(void); int use(void) { return volctl_test_lib(); }\n"
	lib := func(t *testing.T, path string, mode os.FileMode) {
		t.Helper()
		ccBuild(t, path, libSource, "-shared", "-fPIC")
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	// prog builds the program under b, linked with libvt (progSource) when withLib is set.
	prog := func(t *testing.T, b string, withLib bool, args ...string) string {
		t.Helper()
		out := filepath.Join(mkdir(t, filepath.Join(b, "bin"), 0o755), "volctl-test-plugin")
		source := ranSource
		if withLib {
			source = progSource
		}
		ccBuild(t, out, source, args...)
		return out
	}
	for _, tt := range []struct {
		name string
		// setup builds the program under b and returns the words the refusal must name.
		setup func(t *testing.T, b string) (prog string, want []string)
	}{
		{"a NEEDED path in a directory other users may write", func(t *testing.T, b string) (string, []string) {
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			lib(t, filepath.Join(open, "libvt.so"), 0o755)
			p := prog(t, b, true, filepath.Join(open, "libvt.so"))
			return p, []string{"NEEDED " + filepath.Join(open, "libvt.so"), open + " is writable by other users (mode 0777)"}
		}},
		{"a library other users may write in a RUNPATH directory root keeps", func(t *testing.T, b string) (string, []string) {
			dir := mkdir(t, filepath.Join(b, "lib"), 0o755)
			lib(t, filepath.Join(dir, "libvt.so"), 0o666)
			p := prog(t, b, true, "-L"+dir, "-lvt", "-Wl,--enable-new-dtags,-rpath,"+dir)
			return p, []string{"NEEDED libvt.so, found in RUNPATH " + dir, filepath.Join(dir, "libvt.so") + " is writable by other users (mode 0666)"}
		}},
		{"a library in the program's RUNPATH whose own RUNPATH other users may write", func(t *testing.T, b string) (string, []string) {
			dir := mkdir(t, filepath.Join(b, "lib"), 0o755)
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			ccBuild(t, filepath.Join(dir, "libvt.so"), libSource, "-shared", "-fPIC", "-Wl,--enable-new-dtags,-rpath,"+open)
			p := prog(t, b, true, "-L"+dir, "-lvt", "-Wl,--enable-new-dtags,-rpath,"+dir)
			return p, []string{"library " + filepath.Join(dir, "libvt.so") + "'s RUNPATH " + open, "NEEDED libvt.so of " + p, open + " is writable by other users (mode 0777)"}
		}},
		{"a library in the program's RUNPATH that needs a path other users may write", func(t *testing.T, b string) (string, []string) {
			dir := mkdir(t, filepath.Join(b, "lib"), 0o755)
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			ccBuild(t, filepath.Join(open, "libw.so"), "int volctl_test_w(void) { return 0; }\n", "-shared", "-fPIC")
			ccBuild(t, filepath.Join(dir, "libvt.so"), libSource, "-shared", "-fPIC", "-Wl,--no-as-needed", filepath.Join(open, "libw.so"))
			p := prog(t, b, true, "-L"+dir, "-lvt", "-Wl,--enable-new-dtags,-rpath,"+dir)
			return p, []string{"library " + filepath.Join(dir, "libvt.so") + "'s NEEDED " + filepath.Join(open, "libw.so"), open + " is writable by other users (mode 0777)"}
		}},
		{"a $LIB of two names, the second other users may write", func(t *testing.T, b string) (string, []string) {
			mkdir(t, filepath.Join(b, "arch"), 0o755)
			mkdir(t, filepath.Join(b, "arch", "lib"), 0o755)
			open := mkdir(t, filepath.Join(b, "arch", "lib", "x86_64-linux-gnu"), 0o777)
			entry := filepath.Join(b, "arch", "$LIB")
			p := prog(t, b, false, "-Wl,--enable-new-dtags,-rpath,"+entry)
			return p, []string{"RUNPATH " + entry, open + " is writable by other users (mode 0777)"}
		}},
		{"a glibc-hwcaps subdirectory other users may write", func(t *testing.T, b string) (string, []string) {
			dir := mkdir(t, filepath.Join(b, "lib"), 0o755)
			mkdir(t, filepath.Join(dir, "glibc-hwcaps"), 0o755)
			open := mkdir(t, filepath.Join(dir, "glibc-hwcaps", "x86-64-v3"), 0o777)
			p := prog(t, b, false, "-Wl,--enable-new-dtags,-rpath,"+dir)
			return p, []string{"RUNPATH " + dir, open + " is writable by other users (mode 0777)"}
		}},
		{"a tls subdirectory other users may write", func(t *testing.T, b string) (string, []string) {
			dir := mkdir(t, filepath.Join(b, "lib"), 0o755)
			open := mkdir(t, filepath.Join(dir, "tls"), 0o777)
			p := prog(t, b, false, "-Wl,--enable-new-dtags,-rpath,"+dir)
			return p, []string{"RUNPATH " + dir, open + " is writable by other users (mode 0777)"}
		}},
		{"a RUNPATH other users may write, in a program without section headers", func(t *testing.T, b string) (string, []string) {
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			p := prog(t, b, false, "-Wl,--enable-new-dtags,-rpath,"+open)
			patchELF(t, p, func(f []byte) {
				binary.LittleEndian.PutUint64(f[0x28:], 0) // e_shoff
				binary.LittleEndian.PutUint16(f[0x3c:], 0) // e_shnum
				binary.LittleEndian.PutUint16(f[0x3e:], 0) // e_shstrndx
			})
			return p, []string{"RUNPATH " + open, open + " is writable by other users (mode 0777)"}
		}},
		{"ELF section headers past the end of the file", func(t *testing.T, b string) (string, []string) {
			p := prog(t, b, false)
			patchELF(t, p, func(f []byte) {
				binary.LittleEndian.PutUint64(f[0x28:], uint64(len(f))+1<<20) // e_shoff
			})
			return p, []string{"ELF headers", "cannot be read"}
		}},
		{"a PT_INTERP longer than a path", func(t *testing.T, b string) (string, []string) {
			p := prog(t, b, false)
			patchELF(t, p, func(f []byte) {
				phoff, phentsize, phnum := binary.LittleEndian.Uint64(f[0x20:]), int(binary.LittleEndian.Uint16(f[0x36:])), int(binary.LittleEndian.Uint16(f[0x38:]))
				for i := range phnum {
					ph := f[int(phoff)+i*phentsize:]
					if elf.ProgType(binary.LittleEndian.Uint32(ph)) == elf.PT_INTERP {
						binary.LittleEndian.PutUint64(ph[32:], 1<<26) // p_filesz
					}
				}
			})
			return p, []string{"program headers", "PT_INTERP is 67108864 bytes"}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := baseDir(t)
			p, want := tt.setup(t, b)
			err := startExec(t, p, nil)
			if err == nil {
				t.Fatalf("the agent ran %s, whose loader finds what another user controls (%q), as uid %d; want it refused", p, want, os.Geteuid())
			}
			for _, w := range append(want, "command "+p, "not run", "ELF program "+p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
			if ranBeside(p) {
				t.Error("the program ran")
			}
		})
	}
}

// LD_LIBRARY_PATH's directories are checked by the env check (untrustedEnv), but ld.so loads
// from them the libraries the program needs, before its RUNPATH: a library another user may
// write, in a directory root keeps, was loaded into the plugin as root, as one in a RUNPATH
// directory was before round 29. Now it is refused as that one is, naming the library and
// LD_LIBRARY_PATH; the same library mode 0644 is run.
func TestAgentRunsNoProgramWhoseLD_LIBRARY_PATHHoldsALibraryAnotherUserMayChange(t *testing.T) {
	const libSource = "int volctl_test_lib(void) { return 0; }\n"
	const progSource = ranSource + "int volctl_test_lib(void); int use(void) { return volctl_test_lib(); }\n"
	for _, mode := range []os.FileMode{0o666, 0o644} {
		t.Run(mode.String(), func(t *testing.T) {
			b := baseDir(t)
			dir := mkdir(t, filepath.Join(b, "lib"), 0o755)
			lib := filepath.Join(dir, "libvt.so")
			ccBuild(t, lib, libSource, "-shared", "-fPIC")
			if err := os.Chmod(lib, mode); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(mkdir(t, filepath.Join(b, "bin"), 0o755), "volctl-test-plugin")
			ccBuild(t, p, progSource, "-L"+dir, "-lvt")
			err := startExec(t, p, map[string]string{"LD_LIBRARY_PATH": dir})
			if mode == 0o644 {
				if err != nil || !ranBeside(p) {
					t.Fatalf("the agent did not run %s with LD_LIBRARY_PATH=%s, whose library is root's: %v", p, dir, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("the agent ran %s with LD_LIBRARY_PATH=%s, whose %s is writable by other users, as uid %d; want it refused", p, dir, lib, os.Geteuid())
			}
			for _, w := range []string{"command " + p, "not run", "ELF program " + p, "NEEDED libvt.so, found in LD_LIBRARY_PATH", lib + " is writable by other users (mode 0666)"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
			if ranBeside(p) {
				t.Error("the program ran")
			}
		})
	}
}

// A library LD_PRELOAD (or LD_AUDIT) names is loaded before the program's own, and ld.so loads
// what it needs in turn, searching its RUNPATH: the env check held the preloaded file to the
// rule, not its RUNPATH, so a root-owned hook whose RUNPATH names a directory any user may write
// brought their library into the plugin as root. Now its RUNPATH is checked as a library's the
// program needs is, the refusal naming LD_PRELOAD and the directory; a bare name is looked up
// where ld.so looks it up (LD_LIBRARY_PATH, then the system's), and a library file any user may
// write found there refused.
func TestAgentRunsNoPluginWhosePreloadedLibraryLoadsWhatAnotherUserMayChange(t *testing.T) {
	const libSource = "int volctl_test_lib(void) { return 0; }\n"
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, b string) (env map[string]string, want []string)
	}{
		{"a preloaded library whose RUNPATH other users may write", func(t *testing.T, b string) (map[string]string, []string) {
			dir := mkdir(t, filepath.Join(b, "lib"), 0o755)
			open := mkdir(t, filepath.Join(b, "open"), 0o777)
			hook := filepath.Join(dir, "libhook.so")
			ccBuild(t, hook, libSource, "-shared", "-fPIC", "-Wl,--enable-new-dtags,-rpath,"+open)
			return map[string]string{"LD_PRELOAD": hook}, []string{"library " + hook + "'s RUNPATH " + open, "LD_PRELOAD " + hook, open + " is writable by other users (mode 0777)"}
		}},
		{"a preloaded library named alone, found in LD_LIBRARY_PATH, that other users may write", func(t *testing.T, b string) (map[string]string, []string) {
			dir := mkdir(t, filepath.Join(b, "lib"), 0o755)
			hook := filepath.Join(dir, "libhook.so")
			ccBuild(t, hook, libSource, "-shared", "-fPIC")
			if err := os.Chmod(hook, 0o666); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"LD_PRELOAD": "libhook.so", "LD_LIBRARY_PATH": dir}, []string{"LD_PRELOAD libhook.so, found in LD_LIBRARY_PATH", hook + " is writable by other users (mode 0666)"}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := baseDir(t)
			env, want := tt.setup(t, b)
			p := filepath.Join(mkdir(t, filepath.Join(b, "bin"), 0o755), "volctl-test-plugin")
			ccBuild(t, p, ranSource)
			err := startExec(t, p, env)
			if err == nil {
				t.Fatalf("the agent ran %s with %v, whose preloaded library loads what another user controls (%q), as uid %d; want it refused", p, env, want, os.Geteuid())
			}
			for _, w := range append(want, "command "+p, "not run") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
			if ranBeside(p) {
				t.Error("the program ran")
			}
		})
	}
}

// patchELF rewrites the 64-bit little-endian ELF file at path through patch; it skips the test
// for another kind.
func patchELF(t *testing.T, path string, patch func([]byte)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 64 || elf.Class(b[elf.EI_CLASS]) != elf.ELFCLASS64 || elf.Data(b[elf.EI_DATA]) != elf.ELFDATA2LSB {
		t.Skip("the test rewrites a 64-bit little-endian ELF header; cc built another kind")
	}
	patch(b)
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// ld.so expands $ORIGIN in LD_LIBRARY_PATH to the ELF program's directory: for a script, its
// interpreter's, not the script's. The env check expands it to the script's, which is root's,
// and the loader's check passed over a directory failing the rule: with the interpreter's
// ../lib writable by any user, the plugin ran, that directory searched for its libraries. Now
// the loader's check refuses it, naming LD_LIBRARY_PATH and the directory.
func TestAgentRunsNoScriptWhoseInterpretersORIGINInLD_LIBRARY_PATHAnotherUserMayWrite(t *testing.T) {
	b := baseDir(t)
	ibin := mkdir(t, filepath.Join(mkdir(t, filepath.Join(b, "i"), 0o755), "bin"), 0o755)
	open := mkdir(t, filepath.Join(b, "i", "lib"), 0o777)
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Skipf("no /bin/sh to copy as the interpreter: %v", err)
	}
	interp := filepath.Join(ibin, "sh")
	if err := os.WriteFile(interp, sh, 0o755); err != nil {
		t.Fatal(err)
	}
	sbin := mkdir(t, filepath.Join(mkdir(t, filepath.Join(b, "s"), 0o755), "bin"), 0o755)
	mkdir(t, filepath.Join(b, "s", "lib"), 0o755)
	prog := filepath.Join(sbin, "volctl-test-plugin")
	if err := os.WriteFile(prog, []byte("#!"+interp+"\ntouch \"$0.ran\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = startExec(t, prog, map[string]string{"LD_LIBRARY_PATH": "$ORIGIN/../lib"})
	if err == nil {
		t.Fatalf("the agent ran %s, whose interpreter %s's loader searches %s (LD_LIBRARY_PATH=$ORIGIN/../lib), writable by any user, as uid %d; want it refused", prog, interp, open, os.Geteuid())
	}
	for _, want := range []string{"command " + prog, "not run", "ELF program " + interp, "environment's LD_LIBRARY_PATH entry $ORIGIN/../lib",
		open + " is writable by other users", "out of the exec block's env"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %q", err, want)
		}
	}
	if ranBeside(prog) {
		t.Error("the program ran")
	}
}
