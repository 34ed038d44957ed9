package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

const validVolume = `id        = "db"
name      = "db"
type      = "csi"
plugin_id = "hostpath"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`

const invalidVolume = `id        = "db"
type      = "csi"
plugin_id = "hostpath"
capability {
  access_mode     = "single-node-writter"
  attachment_mode = "file-system"
}
secrets {
  "bad key" = "hunter2"
}
`

func TestValidateFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		verb     spec.Verb
		files    []string
		export   exportFlags
		wantErr  string
		wantCode int
	}{
		{name: "one file", args: []string{"a.hcl"}, files: []string{"a.hcl"}},
		{name: "verb and files", args: []string{"--for", "create", "a.hcl", "b.json"}, verb: spec.VerbCreate, files: []string{"a.hcl", "b.json"}},
		{name: "register", args: []string{"--for=register", "-"}, verb: spec.VerbRegister, files: []string{"-"}},
		{name: "json", args: []string{"--json", "a.hcl"}, files: []string{"a.hcl"}, export: exportFlags{JSON: true}},
		{name: "no file", args: nil, wantErr: "requires at least 1 arg", wantCode: ExitUsage},
		{name: "bad verb", args: []string{"--for", "delete", "a.hcl"}, wantErr: `--for must be register or create, not "delete"`, wantCode: ExitUsage},
		{name: "stdin twice", args: []string{"-", "-"}, wantErr: "only once", wantCode: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseOptions(t, newCmdValidate, tt.args...)
			if expectErr(t, err, tt.wantErr, tt.wantCode) {
				return
			}
			if got.Export.ios != got.IO || got.IO == nil {
				t.Fatalf("validate's -t and --jq print to streams other than the command's")
			}
			got.Export.ios = nil // the command's, checked above; not a flag
			if got.Export.result != reflect.TypeFor[[]spec.JSONDiagnostic]() || !got.Export.reads {
				t.Fatalf("validate's -t is not held to what it prints, []spec.JSONDiagnostic: %v", got.Export.result)
			}
			got.Export.result, got.Export.reads = nil, false // checked above; not flags
			if got.Verb != tt.verb || strings.Join(got.Files, ",") != strings.Join(tt.files, ",") || got.Export != tt.export {
				t.Fatalf("options = %+v", got)
			}
		})
	}
}

func writeSpecs(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestValidateRun(t *testing.T) {
	dir := writeSpecs(t, map[string]string{
		"valid.hcl":   validVolume,
		"invalid.hcl": invalidVolume,
		"warn.hcl":    strings.Replace(validVolume, `"single-node-writer"`, `"single-node-reader"`, 1),
		"plugins.hcl": "plugin \"a\" {\n  type = \"node\"\n  socket = \"/run/a.sock\"\n}\nplugin \"b\" {\n  type = \"controller\"\n  socket = \"/run/b.sock\"\n}\n",
		"copy.hcl":    validVolume,
		"b-again.hcl": "plugin \"b\" {\n  type = \"controller\"\n  socket = \"/run/b2.sock\"\n}\n", // b's controller half again
		"db.hcl":      "plugin \"db\" {\n  type = \"node\"\n  socket = \"/run/db.sock\"\n}\n",
		"group.json":  `{"group": {"web": {"volume": {"data": {"type": "csi", "source": "db", "access_mode": "single-node-writer", "attachment_mode": "file-system"}}}}}`,
	})
	path := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name       string
		files      []string
		verb       spec.Verb
		stdin      string
		code       int
		stdout     []string
		stderr     []string
		noStdout   bool
		notStdouts []string
		notStderrs []string
	}{
		{name: "valid", files: []string{path("valid.hcl")}, stdout: []string{path("valid.hcl") + `: valid volume "db"` + "\n"}},
		{name: "valid for create", files: []string{path("valid.hcl")}, verb: spec.VerbCreate, stdout: []string{`valid volume "db" (for create)`}},
		{name: "invalid for register", files: []string{path("valid.hcl")}, verb: spec.VerbRegister, code: ExitUsage, noStdout: true,
			stderr: []string{"Error: Missing required argument", "external_id is required to register"}},
		{name: "invalid", files: []string{path("invalid.hcl")}, code: ExitUsage, noStdout: true,
			stderr:     []string{"Error: Invalid access mode", path("invalid.hcl") + ":5:21, in capability:", `Did you mean "single-node-writer"?`, "Error: Invalid secret key"},
			notStderrs: []string{"hunter2"}},
		{name: "warnings still valid", files: []string{path("warn.hcl")}, stdout: []string{`valid volume "db", 1 warning`}, stderr: []string{"Warning: Deprecated access mode"}},
		{name: "plugins and group", files: []string{path("plugins.hcl"), path("group.json")},
			stdout: []string{`plugins.hcl: valid plugins "a", "b"`, `group.json: valid group "web"`}},
		{name: "one invalid among several", files: []string{path("valid.hcl"), path("invalid.hcl")}, code: ExitUsage,
			stdout: []string{`valid.hcl: valid volume "db"`}, stderr: []string{"invalid.hcl:5:21"}},
		// What volume create or plugin register would refuse: one ID declared in two files.
		{name: "one volume ID in two files", files: []string{path("valid.hcl"), path("copy.hcl")}, code: ExitUsage,
			stdout: []string{`valid.hcl: valid volume "db"`}, notStdouts: []string{"copy.hcl"},
			stderr: []string{"Error: Duplicate volume ID", fmt.Sprintf(`The volume "db" is declared in both %s and %s`, path("valid.hcl"), path("copy.hcl"))}},
		{name: "one plugin ID in two files", files: []string{path("plugins.hcl"), path("b-again.hcl")}, code: ExitUsage,
			stdout: []string{`plugins.hcl: valid plugins "a", "b"`}, notStdouts: []string{"b-again.hcl"},
			stderr: []string{"Error: Duplicate plugin ID", fmt.Sprintf(`The plugin "b" is declared in both %s and %s`, path("plugins.hcl"), path("b-again.hcl"))}},
		{name: "a volume and a plugin may share an ID", files: []string{path("valid.hcl"), path("db.hcl")},
			stdout: []string{`valid.hcl: valid volume "db"`, `db.hcl: valid plugin "db"`}},
		{name: "stdin", files: []string{"-"}, stdin: invalidVolume, code: ExitUsage, stderr: []string{"<stdin>:5:21"}},
		{name: "stdin valid", files: []string{"-"}, stdin: validVolume, stdout: []string{`<stdin>: valid volume "db"`}},
		{name: "unreadable", files: []string{path("missing.hcl"), path("invalid.hcl")}, code: ExitError,
			stderr: []string{"Error: validate " + path("missing.hcl") + ": no such file or directory", "Invalid access mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, in, out, errOut := iostreams.Test()
			in.WriteString(tt.stdin)
			err := validateRun(context.Background(), &ValidateOptions{IO: ios, Verb: tt.verb, Files: tt.files, ReadFile: os.ReadFile})
			if code := ExitCode(err); code != tt.code {
				t.Fatalf("exit %d (%v), want %d\nstderr:\n%s", code, err, tt.code, errOut)
			}
			if err != nil && !isSilent(err) {
				t.Errorf("error %v should be silent: its message was printed already", err)
			}
			checkHolds(t, "stdout", out.String(), tt.stdout, tt.notStdouts)
			if tt.noStdout && out.Len() > 0 {
				t.Errorf("stdout should be empty:\n%s", out)
			}
			checkHolds(t, "stderr", errOut.String(), tt.stderr, tt.notStderrs)
			if strings.Contains(errOut.String(), "\x1b[") {
				t.Error("colour off a terminal")
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	dir := writeSpecs(t, map[string]string{"valid.hcl": validVolume, "invalid.hcl": invalidVolume})
	ios, _, out, errOut := iostreams.Test()
	err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{filepath.Join(dir, "valid.hcl"), filepath.Join(dir, "invalid.hcl")},
		Export: exportFlags{JSON: true}, ReadFile: os.ReadFile})
	if ExitCode(err) != ExitUsage {
		t.Fatalf("exit %d, want 2", ExitCode(err))
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr should be empty with --json:\n%s", errOut)
	}
	var got []spec.JSONDiagnostic
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got) != 2 {
		t.Fatalf("want 2 diagnostics, got %+v", got)
	}
	d := got[0]
	if d.File != filepath.Join(dir, "invalid.hcl") || d.Severity != "error" || d.Summary != "Invalid access mode" ||
		d.Range == nil || d.Range.Start.Line != 5 || d.Range.Start.Column != 21 || d.Range.End.Column != 42 {
		t.Errorf("first diagnostic = %+v", d)
	}
	if strings.Contains(out.String(), "hunter2") {
		t.Error("secret in JSON output")
	}

	ios, _, out, _ = iostreams.Test()
	if err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{filepath.Join(dir, "valid.hcl")}, Export: exportFlags{JSON: true}, ReadFile: os.ReadFile}); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("all valid: want [], got %s", out)
	}

	ios, _, out, _ = iostreams.Test()
	validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{filepath.Join(dir, "invalid.hcl")}, Export: exportFlags{Template: "{{range .}}{{.range.start.line}}:{{.summary}}\n{{end}}"}, ReadFile: os.ReadFile})
	if out.String() != "5:Invalid access mode\n9:Invalid secret key\n" {
		t.Errorf("template output %q", out)
	}
}

func TestValidateTerminal(t *testing.T) {
	dir := writeSpecs(t, map[string]string{"invalid.hcl": invalidVolume})
	ios, _, _, errOut := iostreams.Test()
	ios.SetTTY(false, true, true)
	ios.SetColorEnabled(true)
	ios.SetWidth(60)
	validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{filepath.Join(dir, "invalid.hcl")}, ReadFile: os.ReadFile})
	got := errOut.String()
	if !strings.Contains(got, "\x1b[31mError\x1b[0m") || !strings.Contains(got, "\x1b[1;4m") {
		t.Errorf("no colour on a terminal:\n%q", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if len(line) > 60 && !strings.HasPrefix(line, " ") {
			t.Errorf("detail line longer than the terminal: %q", line)
		}
	}
}

// cancelAfter is a stderr that cancels the command's context (Ctrl-C) once it has taken n
// writes, as a terminal would while a long list of diagnostics scrolls by.
type cancelAfter struct {
	n, writes int
	cancel    context.CancelFunc
	buf       strings.Builder
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes == w.n {
		w.cancel()
	}
	return w.buf.Write(p)
}

// TestValidateStopsWhenInterrupted: Ctrl-C (the command's context ending) while validate prints
// a long list of diagnostics stops it at the next diagnostic, exiting as an interrupted command
// does (1, saying so), with every diagnostic printed whole and no later file looked at; with
// --json, nothing is printed. validate printed all 3,000 and went on to the next file.
func TestValidateStopsWhenInterrupted(t *testing.T) {
	var b strings.Builder
	b.WriteString(validVolume)
	for i := range 3000 {
		fmt.Fprintf(&b, "unknown_%d = 1\n", i)
	}
	dir := writeSpecs(t, map[string]string{"many.hcl": b.String(), "valid.hcl": validVolume})
	files := []string{filepath.Join(dir, "many.hcl"), filepath.Join(dir, "valid.hcl")}
	for _, export := range []exportFlags{{}, {JSON: true}} {
		ctx, cancel := context.WithCancel(context.Background())
		ios, _, out, _ := iostreams.Test()
		errOut := &cancelAfter{n: 10, cancel: cancel}
		ios.ErrOut = errOut
		if export.JSON {
			cancel()
		}
		err := validateRun(ctx, &ValidateOptions{IO: ios, Files: files, Export: export, ReadFile: os.ReadFile})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "interrupted") || ExitCode(err) != ExitError {
			t.Errorf("json=%v: %v (exit %d), want it interrupted, exit %d", export.JSON, err, ExitCode(err), ExitError)
		}
		if errOut.writes > 10 || out.Len() > 0 {
			t.Errorf("json=%v: %d writes to stderr and %q on stdout after Ctrl-C at the 10th, want it stopped there", export.JSON, errOut.writes, out.String())
		}
		if s := errOut.buf.String(); s != "" && (!strings.HasSuffix(s, "\n\n") || strings.Count(s, "Error: ") != errOut.writes) {
			t.Errorf("json=%v: a diagnostic half-written: %q", export.JSON, s[max(0, len(s)-200):])
		}
	}
}

// TestValidateShowsAFilesFirstDiagnostics: a spec within the 1 MiB read limit may hold 100,000
// problems (an unknown argument a line). validate printed every one, 15 MB on stderr or 42 MB
// of JSON, where the first ones say what is wrong; it shows the first spec.MaxShownDiagnostics
// of a file and one more that counts the rest and points at the first of them, the exit
// status still that of every diagnostic: 2 when any error, shown or not, and an error among
// those left out makes the counting one an error too.
func TestValidateShowsAFilesFirstDiagnostics(t *testing.T) {
	const n = 1000 // ten times those shown: 5,000 proved no more, for five times the parsing
	var many, warned strings.Builder
	many.WriteString(validVolume)
	for i := range n {
		fmt.Fprintf(&many, "unknown_%d = 1\n", i)
	}
	// Warnings (a deprecated access mode, a capability listed again) first, an error last.
	warned.WriteString(validVolume)
	for range spec.MaxShownDiagnostics + 50 {
		warned.WriteString("capability {\n  access_mode = \"single-node-reader\"\n  attachment_mode = \"file-system\"\n}\n")
	}
	warnings := warned.String()
	warned.WriteString("unknown_last = 1\n")
	dir := writeSpecs(t, map[string]string{"many.hcl": many.String(), "warned.hcl": warned.String(), "warnings.hcl": warnings})
	for _, c := range []struct {
		file, severity string
		code           int
		more           string
	}{
		{"many.hcl", "error", ExitUsage, fmt.Sprintf("%d more errors", n-spec.MaxShownDiagnostics)},
		{"warned.hcl", "error", ExitUsage, "1 more error and "},
		{"warnings.hcl", "warning", 0, "more warnings"},
	} {
		file := filepath.Join(dir, c.file)
		ios, _, out, errOut := iostreams.Test()
		err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{file}, ReadFile: os.ReadFile})
		if ExitCode(err) != c.code {
			t.Errorf("%s: exit %d (%v), want %d", c.file, ExitCode(err), err, c.code)
		}
		if got := strings.Count(errOut.String(), "\n  on "+file+":"); got != spec.MaxShownDiagnostics+1 {
			t.Errorf("%s: %d diagnostics on stderr (%d bytes), want the first %d and one counting the rest", c.file, got, errOut.Len(), spec.MaxShownDiagnostics)
		}
		if !strings.Contains(errOut.String(), c.more) {
			t.Errorf("%s: stderr does not say %q of what it left out:\n%s", c.file, c.more, errOut.String()[max(0, errOut.Len()-600):])
		}
		if c.code == 0 && !strings.Contains(out.String(), "valid volume") {
			t.Errorf("%s: not reported valid: %q", c.file, out)
		}

		ios, _, out, _ = iostreams.Test()
		err = validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{file}, Export: exportFlags{JSON: true}, ReadFile: os.ReadFile})
		if ExitCode(err) != c.code {
			t.Errorf("%s --json: exit %d (%v), want %d", c.file, ExitCode(err), err, c.code)
		}
		var got []spec.JSONDiagnostic
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%s --json: %v", c.file, err)
		}
		if len(got) != spec.MaxShownDiagnostics+1 {
			t.Fatalf("%s --json: %d diagnostics (%d bytes), want %d", c.file, len(got), out.Len(), spec.MaxShownDiagnostics+1)
		}
		last := got[len(got)-1]
		if last.Severity != c.severity || !strings.Contains(last.Detail, c.more) || last.Range == nil || last.File != file {
			t.Errorf("%s --json: the last diagnostic is %+v, want a %s saying %q where the rest begin", c.file, last, c.severity, c.more)
		}
	}
}

// TestSpecSecretsReadableByOthersAreWarnedOf: a spec file holding secrets (a volume's secrets
// block, a plugin's exec env) that users other than its owner may read (mode 0644, the
// default under umask 022) gave them away without a word; validate, volume create and
// register and plugin register say so, a warning that names the file, its mode and the chmod
// that keeps them private. A private file, or one holding no secret, is not warned of.
func TestSpecSecretsReadableByOthersAreWarnedOf(t *testing.T) {
	withSecret := validVolume + "secrets {\n  token = \"s3cr3t-value\"\n}\n"
	plugin := "plugin \"p\" {\n  type = \"node\"\n  socket = \"/run/p.sock\"\n  exec {\n    command = \"/bin/p\"\n    env { TOKEN = \"s3cr3t-value\" }\n  }\n}\n"
	dir := writeSpecs(t, map[string]string{"open.hcl": withSecret, "private.hcl": withSecret, "plain.hcl": validVolume, "plugin.hcl": plugin})
	path := func(name string) string { return filepath.Join(dir, name) }
	for name, mode := range map[string]os.FileMode{"open.hcl": 0o644, "private.hcl": 0o600, "plain.hcl": 0o644, "plugin.hcl": 0o640} {
		if err := os.Chmod(path(name), mode); err != nil {
			t.Fatal(err)
		}
	}
	// plugin.hcl: readable by a group that is neither root's nor this process's.
	if err := os.Chown(path("plugin.hcl"), -1, os.Getegid()+4242); err != nil {
		t.Skipf("chgrp: %v", err)
	}
	for _, c := range []struct {
		file string
		warn string // "" for none
	}{
		{"open.hcl", "mode 0644"},
		{"plugin.hcl", "mode 0640"},
		{"private.hcl", ""},
		{"plain.hcl", ""},
	} {
		ios, _, out, errOut := iostreams.Test()
		err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{path(c.file)}, ReadFile: os.ReadFile})
		if err != nil {
			t.Errorf("%s: %v, want it valid", c.file, err)
		}
		warned := strings.Contains(errOut.String(), "Warning: Secrets readable by other users")
		if c.warn == "" {
			if warned || strings.Contains(out.String(), "warning") {
				t.Errorf("%s: warned of:\n%s", c.file, errOut)
			}
			continue
		}
		if !warned || !strings.Contains(errOut.String(), c.warn) || !strings.Contains(errOut.String(), "chmod 600 "+path(c.file)) || strings.Contains(errOut.String(), "s3cr3t") {
			t.Errorf("%s: want a warning naming %q and the chmod, without the secret; stderr:\n%s", c.file, c.warn, errOut)
		}
		if !strings.Contains(out.String(), "1 warning") {
			t.Errorf("%s: stdout %q does not count the warning", c.file, out)
		}
		ios, _, out, _ = iostreams.Test()
		if err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{path(c.file)}, Export: exportFlags{JSON: true}, ReadFile: os.ReadFile}); err != nil {
			t.Errorf("%s --json: %v", c.file, err)
		}
		if !strings.Contains(out.String(), `"severity": "warning"`) || !strings.Contains(out.String(), "Secrets readable by other users") {
			t.Errorf("%s --json: no warning in\n%s", c.file, out)
		}
	}
	// volume register reads its files as validate does.
	ios, _, _, errOut := iostreams.Test()
	opts := &VolumeSubmitOptions{IO: ios, Verb: spec.VerbCreate, Files: []string{path("open.hcl")}, ReadFile: os.ReadFile}
	if _, err := parseVolumeSpecs(context.Background(), opts, "volume create"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "Warning: Secrets readable by other users") {
		t.Errorf("volume create: no warning:\n%s", errOut)
	}
}

// TestValidateJSONBoundsDiagnosticsOverAllFiles: validate --json holds every file's diagnostics
// until it writes the array, up to 101 a file (spec.Shown) but unbounded in total: 300 files
// of 150 unknown arguments made 30,300 diagnostics, 12 MB of JSON held in memory, and as many
// files as a command line takes made gigabytes. The array lists the first
// spec.MaxListedDiagnostics of the whole run and one more that counts the rest (errors,
// warnings and the files they are in), where the first of them is, an error when any of them
// is one; the exit status is still that of every diagnostic.
func TestValidateJSONBoundsDiagnosticsOverAllFiles(t *testing.T) {
	const files, each = 30, 150
	var bad strings.Builder
	for i := range each {
		fmt.Fprintf(&bad, "unknown_%d = 1\n", i)
	}
	specs := map[string]string{}
	for i := range files {
		// IDs of their own: one declared twice would add a diagnostic.
		id := fmt.Sprintf("id        = \"db%d\"", i)
		specs[fmt.Sprintf("f%02d.hcl", i)] = strings.Replace(validVolume, `id        = "db"`, id, 1) + bad.String()
	}
	dir := writeSpecs(t, specs)
	var names []string
	for i := range files {
		names = append(names, filepath.Join(dir, fmt.Sprintf("f%02d.hcl", i)))
	}
	ios, _, out, _ := iostreams.Test()
	err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: names, Export: exportFlags{JSON: true}, ReadFile: os.ReadFile})
	if ExitCode(err) != ExitUsage {
		t.Errorf("exit %d (%v), want %d", ExitCode(err), err, ExitUsage)
	}
	var got []spec.JSONDiagnostic
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != spec.MaxListedDiagnostics+1 {
		t.Fatalf("%d diagnostics (%d bytes of JSON) for %d files of %d problems, want the first %d and one counting the rest",
			len(got), out.Len(), files, each, spec.MaxListedDiagnostics)
	}
	// The first file to be cut: how many of its own diagnostics were listed before.
	perFile := spec.MaxShownDiagnostics + 1
	cut := spec.MaxListedDiagnostics / perFile
	listed := spec.MaxListedDiagnostics % perFile
	left := (each - listed) + (files-cut-1)*each
	last := got[len(got)-1]
	want := fmt.Sprintf("%d more errors in %d files", left, files-cut)
	if last.Severity != "error" || last.File != names[cut] || last.Range == nil || last.Range.Start.Line == 0 || !strings.Contains(last.Detail, want) {
		t.Errorf("the last diagnostic is %+v, want an error in %s saying %q", last, names[cut], want)
	}
}
