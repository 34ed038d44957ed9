package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// The volume and top-level forms of register and create are one implementation: each
// command fills the same options with its verb.
func TestVolumeSubmitCommandsShareOneImplementation(t *testing.T) {
	for _, tt := range []struct {
		name string
		new  func(*Factory, func(*VolumeSubmitOptions) error) *cobra.Command
		verb spec.Verb
	}{
		{"volume register", newCmdVolumeRegister, spec.VerbRegister},
		{"register", newCmdRegister, spec.VerbRegister},
		{"volume create", newCmdVolumeCreate, spec.VerbCreate},
		{"create", newCmdCreate, spec.VerbCreate},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseOptions(t, tt.new, "a.hcl", "-")
			if err != nil {
				t.Fatal(err)
			}
			if got.Verb != tt.verb || strings.Join(got.Files, " ") != "a.hcl -" {
				t.Fatalf("verb %q files %q, want %q [a.hcl -]", got.Verb, got.Files, tt.verb)
			}
		})
	}
}

const createSpec = `id = "%s"
name = "%s"
type = "csi"
plugin_id = "mem"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`

func specFiles(files map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) { return []byte(files[name]), nil }
}

func TestParseVolumeSpecs(t *testing.T) {
	files := map[string]string{
		"a.hcl":      strings.NewReplacer("%s", "a").Replace(createSpec),
		"a-copy.hcl": strings.NewReplacer("%s", "a").Replace(createSpec),
		"b.hcl":      strings.NewReplacer("%s", "b").Replace(createSpec),
		"reg.hcl":    `id = "r"` + "\n" + `type = "csi"` + "\n" + `plugin_id = "mem"` + "\n" + `external_id = "x"` + "\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n",
	}
	tests := []struct {
		name    string
		verb    spec.Verb
		files   []string
		wantIDs string
		wantErr string
		stderr  string
	}{
		{name: "two", verb: spec.VerbCreate, files: []string{"a.hcl", "b.hcl"}, wantIDs: "a b"},
		{name: "one ID twice", verb: spec.VerbCreate, files: []string{"a.hcl", "a-copy.hcl"},
			wantErr: `volume "a" is declared in both a.hcl and a-copy.hcl; nothing was created`},
		{name: "a register spec for create", verb: spec.VerbCreate, files: []string{"a.hcl", "reg.hcl"},
			wantErr: "1 of 2 spec files are invalid; nothing was created", stderr: "reg.hcl:4:"},
		{name: "a create spec for register", verb: spec.VerbRegister, files: []string{"a.hcl"},
			wantErr: "volume register: the spec is invalid; nothing was registered", stderr: "external_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, errOut := iostreams.Test()
			o := &VolumeSubmitOptions{IO: ios, ReadFile: specFiles(files), Verb: tt.verb, Files: tt.files}
			vols, err := parseVolumeSpecs(context.Background(), o, "volume "+string(tt.verb))
			if expectErr(t, err, tt.wantErr, ExitUsage) {
				if vols != nil {
					t.Fatalf("vols = %v, want none", vols)
				}
				if !strings.Contains(errOut.String(), tt.stderr) {
					t.Errorf("stderr lacks %q:\n%s", tt.stderr, errOut)
				}
				return
			}
			var ids []string
			for _, v := range vols {
				ids = append(ids, v.ID)
			}
			if strings.Join(ids, " ") != tt.wantIDs {
				t.Fatalf("ids = %v, want %s", ids, tt.wantIDs)
			}
		})
	}
}

// One volume failing does not stop the others: the successes are printed (and are the
// --json array), each failure is on stderr, and the exit code is the first failure's.
func TestVolumeSubmitRunPartialFailure(t *testing.T) {
	h := newCLIHarness(t)
	files := map[string]string{
		"a.hcl":    strings.NewReplacer("%s", "a").Replace(createSpec),
		"lost.hcl": strings.Replace(strings.NewReplacer("%s", "lost").Replace(createSpec), `plugin_id = "mem"`, `plugin_id = "nope"`, 1),
		"b.hcl":    strings.NewReplacer("%s", "b").Replace(createSpec),
	}
	for i := range []int{0, 1} {
		ios, _, out, errOut := iostreams.Test()
		o := &VolumeSubmitOptions{IO: ios, Engine: h.engine, ReadFile: specFiles(files), Verb: spec.VerbCreate,
			Files: []string{"a.hcl", "lost.hcl", "b.hcl"}, Exporter: exportFlags{JSON: i == 1}}
		err := volumeSubmitRun(h.ctx, o)
		if ExitCode(err) != ExitError || !strings.Contains(err.Error(), "volume create: 1 of 3 volumes failed") {
			t.Fatalf("err = %v (exit %d)", err, ExitCode(err))
		}
		if !strings.Contains(errOut.String(), `Error: create volume "lost": plugin "nope" is not registered`) {
			t.Errorf("stderr = %q", errOut)
		}
		if i == 0 {
			checkHolds(t, "stdout", out.String(), []string{`Volume "a" created (external ID "`, `Volume "b" created (external ID "`}, nil)
			continue
		}
		var infos []engine.VolumeInfo
		if err := json.Unmarshal(out.Bytes(), &infos); err != nil {
			t.Fatalf("--json: %v\n%s", err, out)
		}
		if len(infos) != 2 || infos[0].ID != "a" || infos[1].ID != "b" || infos[0].ExternalID == "" {
			t.Errorf("--json = %+v, want a and b created", infos)
		}
	}
}
