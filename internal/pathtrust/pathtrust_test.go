package pathtrust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// accounts points GroupFile and PasswdFile at files of group and passwd for the test; "" for a
// file that does not exist.
func accounts(t *testing.T, group, passwd string) {
	t.Helper()
	dir := t.TempDir()
	gshadow(t, "")
	files := map[*string]string{&GroupFile: group, &PasswdFile: passwd}
	for v, content := range files {
		p := filepath.Join(dir, filepath.Base(*v))
		if content != "" {
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		old := *v
		*v = p
		t.Cleanup(func() { *v = old })
	}
}

// gshadow points GshadowFile at a file of content for the test; "" for none.
func gshadow(t *testing.T, content string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gshadow")
	if content != "" {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := GshadowFile
	GshadowFile = p
	t.Cleanup(func() { GshadowFile = old })
}

// mkdirMode makes dir with mode, past the umask.
func mkdirMode(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Older Debian installs keep /usr/local/bin root:staff with mode 2775; staff, root's equal by
// Debian's word, is normally empty. A directory a group of root alone may write is not
// writable by others: before, every program under it, and every name PATH looked up past it,
// was refused. A group with another member, or whose members cannot be told, still is, and
// the refusal names the group and the whole mode.
func TestGroupOfRootAloneIsNotOthers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory another group needs root")
	}
	const gid = 4243
	const root = "root:x:0:0:root:/root:/bin/sh\ntoor:x:0:0::/root:/bin/sh\ndaemon:x:1:1::/:/usr/sbin/nologin\n"
	tests := []struct {
		name, group, passwd string
		want                []string // in the refusal; none when the program passes
	}{
		{"an empty group", "root:x:0:\nstaff:x:4243:\n", root, nil},
		{"a group of root alone", "staff:x:4243:root,toor\n", root, nil},
		{"a member", "staff:x:4243:root,alice\n", root, []string{"(mode 02775): group staff (gid 4243) may write it, and alice is in it"}},
		{"a primary member", "staff:x:4243:\n", root + "bob:x:1000:4243::/home/bob:/bin/sh\n", []string{"group staff (gid 4243) may write it, and bob is in it"}},
		{"a group not listed", "root:x:0:\n", root, []string{"(mode 02775): group gid 4243 may write it, whose members volctl cannot tell", "does not list it"}},
		{"no group file", "", root, []string{"group gid 4243 may write it, whose members volctl cannot tell"}},
		{"no passwd file", "staff:x:4243:\n", "", []string{"group gid 4243 may write it, whose members volctl cannot tell"}},
		{"NIS compat entries", "staff:x:4243:\n+\n", root, []string{"NIS compat entries"}},
		{"a group password", "staff:$6$salt$hash:4243:\n", root, []string{"group staff (gid 4243) may write it, and anyone given its password (newgrp) is in it"}},
		{"a password in gshadow", "staff:x:4243:\n", root, []string{"anyone given its password (newgrp)"}},
		{"a gshadow member", "staff:x:4243:\n", root, []string{"and carol is in it"}},
		{"a gshadow administrator", "staff:x:4243:\n", root, []string{"and dave is in it"}},
		{"a locked gshadow entry of root alone", "staff:x:4243:\n", root, nil},
	}
	shadows := map[string]string{
		"a password in gshadow":                "staff:$6$salt$hash::\n",
		"a gshadow member":                     "staff:!::root,carol\n",
		"a gshadow administrator":              "staff:!:dave:\n",
		"a locked gshadow entry of root alone": "staff:!*:root:root\n",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			accounts(t, tt.group, tt.passwd)
			gshadow(t, shadows[tt.name])
			base := mkdirMode(t, filepath.Join(t.TempDir(), "usr"), 0o755)
			bin := mkdirMode(t, filepath.Join(base, "bin"), os.ModeSetgid|0o775)
			if err := os.Chown(bin, 0, gid); err != nil {
				t.Fatal(err)
			}
			prog := filepath.Join(bin, "plugin")
			if err := os.WriteFile(prog, []byte("\x7fELF"), 0o755); err != nil {
				t.Fatal(err)
			}
			pr := Program(prog, prog, "/usr/bin:/bin", LoaderEnv{})
			if tt.want == nil {
				if pr != nil {
					t.Fatalf("Program(%s) = %s %s, want it trusted: its group has no member but root", prog, pr.Path, pr.Why)
				}
				if pr := Program("plugin", prog, "", LoaderEnv{}); pr != nil {
					t.Fatalf("Program(plugin) = %s %s, want it trusted", pr.Path, pr.Why)
				}
				return
			}
			if pr == nil {
				t.Fatalf("Program(%s) = nil, want %s refused: %q", prog, bin, tt.want)
			}
			for _, w := range append([]string{"is writable by other users (mode 02775)"}, tt.want...) {
				if pr.Path != bin || !strings.Contains(pr.Why, w) {
					t.Errorf("Program(%s) = %s %s, want %s and %q", prog, pr.Path, pr.Why, bin, w)
				}
			}
		})
	}
}

// A script is run by the interpreter its #! line names: one another user may change runs
// their code as root as surely as the script would. Before, a root-owned script in a root
// directory passed, whatever its interpreter. Through env, the command it looks up in the
// program's PATH is checked as a name alone is; a chain of scripts is followed, a loop ends.
func TestProgramChecksAScriptsInterpreter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory another owner needs root")
	}
	base := mkdirMode(t, filepath.Join(t.TempDir(), "b"), 0o755)
	bin := mkdirMode(t, filepath.Join(base, "bin"), 0o755)
	alice := mkdirMode(t, filepath.Join(base, "alice"), 0o755)
	if err := os.Chown(alice, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	open := mkdirMode(t, filepath.Join(base, "open"), 0o777)
	tmp := mkdirMode(t, filepath.Join(base, "tmp"), 0o777|os.ModeSticky)
	write := func(name, content string) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	aliceSh := filepath.Join(alice, "python")
	if err := os.WriteFile(aliceSh, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("interp", "\x7fELF")
	tests := []struct {
		name, script, envPath string
		path, why, shadowed   string // of the problem; "" path for none
	}{
		{"an interpreter in another user's directory", "#!" + aliceSh + "\n", "", alice, "is owned by uid 4242", ""},
		{"blanks and an argument", "#! \t" + aliceSh + " -u -x\n", "", alice, "is owned by uid 4242", ""},
		{"an interpreter that is a script", "#!" + write("mid", "#!"+aliceSh+"\n") + "\n", "", alice, "is owned by uid 4242", ""},
		{"env, a name in a PATH dir others may write", "#!/usr/bin/env interp\n", open + ":" + bin, open, "is writable by other users (mode 0777)", "interp"},
		{"env -S with PATH=", "#!/usr/bin/env -S -i PATH=" + open + ":" + bin + " interp -u\n", bin, open, "is writable by other users (mode 0777)", "interp"},
		{"env, a PATH's empty entry, the working directory", "#!/usr/bin/env interp\n", ":" + bin, open, "is writable by other users (mode 0777)", "interp"},
		{"env, a name found nowhere", "#!/usr/bin/env volctl-test-none\n", bin + ":" + open, open, "is writable by other users (mode 0777)", "volctl-test-none"},
		{"an interpreter missing, in a sticky directory", "#!" + filepath.Join(tmp, "x", "python") + "\n", "", filepath.Join(tmp, "x", "python"), "does not exist, and " + tmp + ", where another user could make it, is writable by other users (mode 01777)", ""},
		{"a trusted interpreter", "#!" + filepath.Join(bin, "interp") + "\n", "", "", "", ""},
		{"env, found in trusted dirs first", "#!/usr/bin/env interp\n", bin + ":" + open, "", "", ""},
		{"a loop of scripts", "#!" + filepath.Join(bin, "loop") + "\n", "", "", "", ""},
		{"no #!", "echo hi\n", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "loop"
			if tt.name != "a loop of scripts" {
				name = "script"
			}
			script := write(name, tt.script)
			t.Chdir(open)
			pr := Program(script, script, tt.envPath, LoaderEnv{})
			switch {
			case tt.path == "" && pr != nil:
				t.Fatalf("Program(%s) = %s %s, want it trusted", script, pr.Path, pr.Why)
			case tt.path == "":
			case pr == nil:
				t.Fatalf("Program(%s) = nil, want %s %s: its #! line runs what another user may change", script, tt.path, tt.why)
			case pr.Path != tt.path || !strings.Contains(pr.Why, tt.why) || pr.Shadowed != tt.shadowed || pr.Script == "":
				t.Errorf("Program(%s) = %+v, want Path %s, Why %q, Shadowed %q and a Script", script, pr, tt.path, tt.why, tt.shadowed)
			}
		})
	}
}

// A directory of PATH that does not exist yet is made by whoever may write the directory it
// would be in, sticky or not (mkdir -p /tmp/x/bin), who then has a program of theirs found
// first. Before, a missing entry passed.
func TestProgramMissingPATHEntry(t *testing.T) {
	base := mkdirMode(t, filepath.Join(t.TempDir(), "b"), 0o755)
	bin := mkdirMode(t, filepath.Join(base, "bin"), 0o755)
	tmp := mkdirMode(t, filepath.Join(base, "tmp"), 0o777|os.ModeSticky)
	prog := filepath.Join(bin, "plugin")
	if err := os.WriteFile(prog, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "x", "bin")
	t.Setenv("PATH", missing+":"+bin)
	pr := Program("plugin", prog, "", LoaderEnv{})
	if pr == nil {
		t.Fatalf("Program(plugin) = nil, want %s refused: another user may make it in %s", missing, tmp)
	}
	if want := "does not exist, and " + tmp + ", where another user could make it, is writable by other users (mode 01777)"; pr.Path != missing || pr.Why != want || pr.Shadowed != "plugin" {
		t.Errorf("Program(plugin) = %+v, want Path %s, Why %q, Shadowed plugin", pr, missing, want)
	}
	t.Setenv("PATH", filepath.Join(base, "missing", "bin")+":"+bin)
	if pr := Program("plugin", prog, "", LoaderEnv{}); pr != nil {
		t.Errorf("Program(plugin) = %+v, want nil: only this user may make %s", pr, filepath.Join(base, "missing"))
	}
}

// A relative path is the working directory's: walked from "/" before, "shared/out" was checked
// as /shared/out, passing a symlink another user planted in a directory all may write, and
// refusing a path of this user's for a directory of the same name under "/".
func TestRelativePathIsWalkedFromTheWorkingDirectory(t *testing.T) {
	base := t.TempDir()
	shared := mkdirMode(t, filepath.Join(base, "shared"), 0o777)
	t.Chdir(base)
	for _, f := range []func(string) *Problem{Ancestors, Replaceable} {
		if pr := f("shared/out"); pr == nil || pr.Path != shared {
			t.Errorf("shared/out in %s: %+v, want %s named writable by other users", base, pr, shared)
		}
	}
	// base's own path, relative, from a working directory holding it: base under "/" is
	// writable by all, the one named is not.
	rel := strings.TrimPrefix(base, "/")
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, rel, "out"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	for _, f := range []func(string) *Problem{Ancestors, Replaceable} {
		if pr := f(rel + "/out"); pr != nil {
			t.Errorf("%s/out in %s: %s %s, want nil (that is /%s/out's way, not this one's)", rel, wd, pr.Path, pr.Why, rel)
		}
	}
}
