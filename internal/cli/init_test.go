package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

func TestInitArgs(t *testing.T) {
	tests := []struct {
		args     []string
		kind     spec.Kind
		file     string
		wantErr  string
		wantCode int
	}{
		{args: nil, kind: spec.KindVolume, file: "volume.hcl"},
		{args: []string{"plugin"}, kind: spec.KindPlugin, file: "plugin.hcl"},
		{args: []string{"group", "web.hcl"}, kind: spec.KindGroup, file: "web.hcl"},
		{args: []string{"volume", "-"}, kind: spec.KindVolume, file: "-"},
		{args: []string{"job"}, wantErr: `unknown kind "job": want volume, plugin, group`, wantCode: ExitUsage},
		{args: []string{"volum"}, wantErr: "unknown kind \"volum\": want volume, plugin, group\n\nDid you mean this?\n\tvolume", wantCode: ExitUsage},
		{args: []string{"grop", "web.hcl"}, wantErr: "\n\nDid you mean this?\n\tgroup", wantCode: ExitUsage},
		{args: []string{"my.hcl"}, wantErr: `volctl init volume my.hcl`, wantCode: ExitUsage},
		{args: []string{"volume", "a", "b"}, wantErr: "accepts at most 2 arg", wantCode: ExitUsage},
		// The example is HCL with comments, not JSON: a .json name is refused for it.
		{args: []string{"volume", "web.json"}, wantErr: `init: the example is HCL with comments, not JSON, and web.json is named as JSON (volctl and Nomad would read it as HCL, but other tools would not): give a .hcl name (volctl init volume web.hcl)`, wantCode: ExitUsage},
		{args: []string{"group", "G.JSON"}, wantErr: `give a .hcl name (volctl init group G.hcl)`, wantCode: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseOptions(t, newCmdInit, tt.args...)
			if expectErr(t, err, tt.wantErr, tt.wantCode) {
				return
			}
			if got.Kind != tt.kind || got.File != tt.file {
				t.Fatalf("options = %+v", got)
			}
		})
	}
}

func TestInitRun(t *testing.T) {
	dir := t.TempDir()
	for _, kind := range spec.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			path := filepath.Join(dir, string(kind)+".hcl")
			ios, _, out, errOut := iostreams.Test()
			if err := initRun(&InitOptions{IO: ios, Kind: kind, File: path}); err != nil {
				t.Fatal(err)
			}
			if out.Len() > 0 || !strings.Contains(errOut.String(), "written to "+path) {
				t.Errorf("stdout %q stderr %q", out, errOut)
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if f, diags := spec.NewParser().Parse(path, src, spec.VerbAny); f == nil || len(diags) > 0 || f.Kind != kind {
				t.Errorf("written example does not validate as a %s: %v", kind, diags)
			}

			// A second run must leave the (edited) file alone.
			os.WriteFile(path, []byte("# mine\n"), 0o644)
			ios, _, _, _ = iostreams.Test()
			err = initRun(&InitOptions{IO: ios, Kind: kind, File: path})
			if ExitCode(err) != ExitError || !strings.Contains(err.Error(), path+" already exists") {
				t.Fatalf("second init: %v (exit %d)", err, ExitCode(err))
			}
			if b, _ := os.ReadFile(path); string(b) != "# mine\n" {
				t.Error("existing file overwritten")
			}
		})
	}

	ios, _, out, _ := iostreams.Test()
	if err := initRun(&InitOptions{IO: ios, Kind: spec.KindVolume, File: "-"}); err != nil {
		t.Fatal(err)
	}
	want, _ := spec.Example(spec.KindVolume)
	if out.String() != string(want) {
		t.Error("stdout is not the example")
	}

	ios, _, _, _ = iostreams.Test()
	err := initRun(&InitOptions{IO: ios, Kind: spec.KindVolume, File: filepath.Join(dir, "no", "such", "dir.hcl")})
	if err == nil || ExitCode(err) != ExitError || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("unwritable path: %v", err)
	}
}

// `init volume web.hcl` names the volume after the file, and the result still validates for
// create; the default volume.hcl, and names that are no volume ID, keep the example's "data".
func TestInitNamesVolumeAfterFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ file, id string }{
		{"web.hcl", "web"},
		{"db-1.volume", "db-1"},
		{"my ${x} vol.hcl", "my ${x} vol"},
		{"volume.hcl", "data"},
		{".hcl", "data"},
		{"d\u200bb.hcl", "data"}, // a zero width space: no ID volctl makes (spec.ValidateNewID)
	} {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			ios, _, _, _ := iostreams.Test()
			if err := initRun(&InitOptions{IO: ios, Kind: spec.KindVolume, File: path}); err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, diags := spec.NewParser().Parse(path, src, spec.VerbCreate)
			if f == nil || len(diags) > 0 || f.Volume == nil {
				t.Fatalf("written example does not validate for create: %v\n%s", diags, src)
			}
			if f.Volume.ID != tt.id || f.Volume.Name != tt.id {
				t.Errorf("volume id %q name %q, want both %q", f.Volume.ID, f.Volume.Name, tt.id)
			}
			if tt.id == "web" && !strings.Contains(string(src), "volctl volume create web.hcl") {
				t.Errorf("the example's usage comment does not name web.hcl:\n%s", src)
			}
		})
	}
}

// `init group web.hcl` and `init plugin hp.hcl` write usage comments that name the file
// written, as `init volume` does: the commands a new user copies from the example's head
// named group.hcl and plugin.hcl, files that are not there. Standard output keeps the names.
func TestInitUsageCommentsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		kind spec.Kind
		file string
		want []string
	}{
		{spec.KindGroup, "web.hcl", []string{"#   volctl validate web.hcl\n", "#   volctl group run web.hcl\n"}},
		{spec.KindPlugin, "hp.hcl", []string{"#   volctl validate hp.hcl\n", "#   volctl plugin register hp.hcl\n"}},
		{spec.KindGroup, "my group.hcl", []string{"#   volctl validate 'my group.hcl'\n", "#   volctl group run 'my group.hcl'\n"}},
		{spec.KindGroup, "-", []string{"#   volctl group run group.hcl\n"}},
	} {
		ios, _, out, _ := iostreams.Test()
		file := tt.file
		if file != "-" {
			file = filepath.Join(dir, tt.file)
		}
		if err := initRun(&InitOptions{IO: ios, Kind: tt.kind, File: file}); err != nil {
			t.Fatal(err)
		}
		src := out.Bytes()
		if file != "-" {
			var err error
			if src, err = os.ReadFile(file); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range tt.want {
			if !strings.Contains(string(src), w) {
				t.Errorf("init %s %s: the example lacks %q:\n%s", tt.kind, tt.file, w, src)
			}
		}
	}
}
