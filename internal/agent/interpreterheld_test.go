package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// Legitimate plugin starts through the interpreters the agent reads start: node with its
// options and a package by name, python with -m, -W, -X, shells with -e, -o, -c and ENV a
// word, env with assignments, --, -u and --chdir=, an env -S #! line, perl -T, -CSDA, -Mstrict.
func TestLegitimateInterpreterStartsStillStart(t *testing.T) {
	safe, _ := argsDirs(t)
	node, py, sh, bash, env, perl := argsLook(t, "node"), argsLook(t, "python3"), argsLook(t, "sh"), argsLook(t, "bash"), argsLook(t, "env"), argsLook(t, "perl")
	js := argsWrite(t, filepath.Join(safe, "index.js"), "1\n")
	pyS := writeScript(t, filepath.Join(safe, "p.py"), "python3")
	shS := writeScript(t, filepath.Join(safe, "run.sh"), "sh")
	plS := writeScript(t, filepath.Join(safe, "p.pl"), "perl")
	shebang := filepath.Join(safe, "sb.js")
	if err := os.WriteFile(shebang, []byte("#!/usr/bin/env -S node --enable-source-maps --title csi\n1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ep := []string{"--endpoint", "unix:///csi/csi.sock"}
	for _, c := range []struct {
		cmd  string
		args []string
		env  []string
	}{
		{node, append([]string{js}, ep...), nil},
		{node, append([]string{"--max-old-space-size=512", "--trace-warnings", "--enable-source-maps", "--no-warnings", "--unhandled-rejections=strict", "--title", "x", js}, ep...), nil},
		{node, []string{"--dns-result-order=ipv4first", "-r", "dotenv/config", js}, nil},
		{py, []string{"-u", "-m", "csi_plugin"}, nil},
		{py, []string{"-W", "ignore", pyS}, nil},
		{py, []string{"-X", "frozen_modules=off", pyS}, nil},
		{bash, []string{"-e", "-o", "pipefail", shS}, nil},
		{sh, []string{"-ec", "exec /opt/bin/plugin"}, []string{"ENV=production", "HOME=/root"}},
		{bash, []string{"-l", shS}, []string{"HOME=/root"}},
		{env, []string{"LANG=C.UTF-8", "/bin/true"}, nil},
		{env, []string{"--", "/bin/true"}, nil},
		{env, []string{"-u", "FOO", "--chdir=/", "/bin/true"}, nil},
		{shebang, ep, nil},
		{perl, []string{"-T", plS}, nil},
		{perl, []string{"-w", "-CSDA", "-Mstrict", plS}, nil},
		{sh, []string{shS}, []string{"ENV=production"}},
	} {
		if err := untrustedArgs(filepath.Base(c.cmd), c.cmd, c.args, c.env, "/"); err != nil {
			t.Errorf("%s %q (env %q) refused: %v", c.cmd, c.args, c.env, err)
		}
	}
	// in a test's cwd (/tmp/...) node -r NAME is refused: /tmp/node_modules may be made by anyone.
	if err := untrustedArgs("node", node, []string{"-r", "dotenv/config", js}, nil, t.TempDir()); err == nil {
		t.Errorf("node -r NAME from a /tmp cwd ran")
	}
}

// The ways round the reader earlier rounds closed stay closed: node's module and env-file
// options in each form, NODE_OPTIONS, perl's and ruby's -I, -Mlib=, ruby -r, PERL5OPT, an
// interactive shell's ENV and --rcfile.
func TestKnownInterpreterBypassesStayRefused(t *testing.T) {
	safe, open := argsDirs(t)
	node, perl, sh := argsLook(t, "node"), argsLook(t, "perl"), argsLook(t, "sh")
	js := argsWrite(t, filepath.Join(safe, "index.js"), "1\n")
	evil := argsWrite(t, filepath.Join(open, "e.js"), "1\n")
	ef := argsWrite(t, filepath.Join(safe, "vars.env"), "NODE_OPTIONS=\"--require "+evil+"\"\n")
	ef2 := argsWrite(t, filepath.Join(safe, "vars2.env"), "export LD_PRELOAD="+open+"/x.so\n")
	rb := filepath.Join(safe, "ruby")
	b, err := os.ReadFile("/bin/true")
	if err == nil {
		err = os.WriteFile(rb, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	plS := writeScript(t, filepath.Join(safe, "p.pl"), "perl")
	for _, c := range []struct {
		cmd  string
		args []string
		env  []string
	}{
		{node, []string{"--require=" + evil, js}, nil},
		{node, []string{"--import=file://" + evil, js}, nil},
		{node, []string{"--loader", evil, js}, nil},
		{node, []string{"--experimental-loader=" + evil, js}, nil},
		{node, []string{"-r", evil, js}, nil},
		{node, []string{"--env-file=" + ef, js}, nil},
		{node, []string{"--env-file", ef2, js}, nil},
		{node, []string{"-e", "1", "--require", evil}, nil},
		{node, []string{js}, []string{"NODE_OPTIONS=--require=" + evil}},
		{node, []string{js}, []string{"NODE_OPTIONS=--import " + evil}},
		{perl, []string{"-I" + open, plS}, nil},
		{perl, []string{"-Mlib=" + open, plS}, nil},
		{perl, []string{plS}, []string{"PERL5OPT=-I" + open}},
		{rb, []string{"-I" + open, "x.rb"}, nil},
		{rb, []string{"-r", evil, "x.rb"}, nil},
		{rb, []string{"-w", "-I", open, "x.rb"}, nil},
		{sh, []string{"-i", "-c", "true"}, []string{"ENV=" + evil}},
		{sh, []string{"--rcfile", evil, "-i"}, nil},
	} {
		err := untrustedEnv(filepath.Base(c.cmd), c.cmd, c.env)
		if err == nil {
			err = untrustedArgs(filepath.Base(c.cmd), c.cmd, c.args, c.env, "/")
		}
		if err == nil {
			t.Errorf("%s %q (env %q) ran", c.cmd, c.args, c.env)
		}
	}
}
