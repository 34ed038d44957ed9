package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestClaimTemplateWithAnUnknownFieldClaimsNothing: a -t naming a field a claim never has
// ({{.target}} for target_path) failed only once the claim was made, exit 2, and a script
// stopping at the error held a claim it did not know of. It is refused before, nothing done.
func TestClaimTemplateWithAnUnknownFieldClaimsNothing(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	ios, _, out, _ := iostreams.Test()
	err := volumeClaimRun(h.ctx, &VolumeClaimOptions{IO: ios, Engine: h.engine, VolumeID: "db", Alloc: "web-0",
		Exporter: exportFlags{Template: "{{.target}}"}})
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), `no field "target" (did you mean target_path?)`) || !strings.Contains(err.Error(), "nothing was done") {
		t.Errorf("claim -t '{{.target}}': %v (exit %d), want a usage error naming the field, saying nothing was done", err, ExitCode(err))
	}
	if out.Len() != 0 {
		t.Errorf("stdout: %q", out)
	}
	claims, cerr := h.e.Claims(h.ctx)
	if cerr != nil {
		t.Fatal(cerr)
	}
	if len(claims) != 0 {
		t.Errorf("the claim was made: %+v", claims)
	}
}

// TestTemplateFieldsCheckedAreTheResults: what a template reads is followed through the
// result's type: the result's fields, a field's fields, what a with or range gives dot, $, and
// the variables the template declares; what a function gives, and a field reached by index, are
// left to the run, as is a field left out when empty. A range over the claim's binds reads a
// bind's fields: one a bind never has is refused, as a typo in an if's branch is (input14 left
// it to the run). Round 61: {{$b.nosuch}} in a range naming its element, {{$c.nosuch}} of
// {{$c := .}} and {{.target_path.x}}, a field of a string, were taken here, the gap this listed
// as left to the run: each fails on every result that runs it, and is refused now.
func TestTemplateFieldsCheckedAreTheResults(t *testing.T) {
	for tmpl, bad := range map[string]string{
		"{{.target_path}}":                                               "",
		"{{.alloc}} {{.state}} {{$.volume_id}}":                          "",
		"{{range .binds}}{{.destination}} {{.read_only}}{{end}}":         "",
		"{{range $i, $b := .binds}}{{$b.destination}}{{$.alloc}}{{end}}": "",
		"{{with .last_error}}{{.}}{{else}}{{.state}}{{end}}":             "",
		`{{index . "group"}} {{if .degraded}}{{.outcome}}{{end}}`:        "",
		"{{$c := .}}{{$c.alloc}}":                                        "",
		"{{.freed_at}} {{.created_at.x}}":                                "",
		`{{$c := index . "binds"}}{{$c.nosuch}}`:                         "",
		// Round 61: taken before, each fails on every result that runs it.
		"{{range $i, $b := .binds}}{{$b.nosuch}}{{$.alloc}}{{end}}": `"nosuch"`,
		"{{$c := .}}{{$c.nosuch}}":                                  `"nosuch"`,
		"{{.target_path.x}}":                                        "string",
		"{{(json .).x}} {{.alloc | printf \"%s\"}}":                 "",
		"{{.Alloc}}":                          `"Alloc"`,
		"{{if .state}}{{.targt_path}}{{end}}": `"targt_path"`,
		"{{range .binds}}{{.destination}} {{.nosuch}}{{end}}": `"nosuch"`,
		"{{range .binds}}{{$.nosuch}}{{end}}":                 `"nosuch"`,
		"{{with .binds}}x{{else}}{{.nope}}{{end}}":            `"nope"`,
		"{{(.volume).x}} {{.a}}":                              `"volume"`,
		"{{printf \"%s\" .nosuch}}":                           `"nosuch"`,
		"{{.binds.destination}}":                              "list",
	} {
		err := checkTemplateFields[engine.ClaimInfo](&exportFlags{Template: tmpl})
		switch {
		case bad == "" && err != nil:
			t.Errorf("%s: %v, want it taken", tmpl, err)
		case bad == "list" && (err == nil || !strings.Contains(err.Error(), ".binds.destination reads a field of a list")):
			t.Errorf("%s: %v, want it refused as a field of a list", tmpl, err)
		case bad == "string" && (err == nil || !strings.Contains(err.Error(), ".target_path.x reads a field of a string")):
			t.Errorf("%s: %v, want it refused as a field of a string", tmpl, err)
		case bad != "" && bad != "list" && bad != "string" && (err == nil || !strings.Contains(err.Error(), "no field "+bad)):
			t.Errorf("%s: %v, want it refused naming %s", tmpl, err, bad)
		}
	}
}

// TestTemplateFieldsOfNestedResults: a release's claim, a detach's lists of claims, a create's
// list of volumes and a reconcile's actions are followed too; what each command's help and
// docs/json.md show is taken.
func TestTemplateFieldsOfNestedResults(t *testing.T) {
	for _, c := range []struct {
		check func(*exportFlags) error
		tmpl  string
		bad   string // "" when taken
	}{
		{checkTemplateFields[engine.ReleaseResult], "{{.claim.target_path}} {{.released}}", ""},
		{checkTemplateFields[engine.ReleaseResult], "{{.claim.nosuch}}", `.claim has no field "nosuch"`},
		{checkTemplateFields[engine.ReleaseResult], "{{with .claim}}{{.targetpath}}{{end}}", `no field "targetpath" (did you mean target_path?)`},
		{checkTemplateFields[engine.DetachResult], "{{range .released}}{{.alloc}}{{end}}{{range .failed}}{{.last_error}}{{end}}", ""},
		{checkTemplateFields[engine.DetachResult], "{{range .released}}{{.allocs}}{{end}}", `no field "allocs"`},
		{checkTemplateFields[[]engine.VolumeInfo], `{{range .}}{{.id}} {{.external_id}}{{"\n"}}{{end}}`, ""},
		{checkTemplateFields[[]engine.VolumeInfo], "{{range .}}{{.plugin_id}} {{range .claims}}{{.alloc}}{{end}}{{end}}", ""},
		{checkTemplateFields[[]engine.VolumeInfo], "{{.id}}", "{{range .}}{{.id}}{{end}}"},
		{checkTemplateFields[[]engine.VolumeInfo], "{{range .}}{{.nosuch}}{{end}}", `no field "nosuch"`},
		{checkTemplateFields[[]engine.PluginInfo], "{{range .}}{{.id}}{{end}}", ""},
		{checkTemplateFields[engine.ReconcileReport], "{{range .actions}}{{.nosuch}}{{end}}", `no field "nosuch"`},
		{checkTemplateFields[engine.VolumeInfo], "{{.id}} {{.capacity_bytes}} {{range $k, $v := .parameters}}{{$k}}{{end}}", ""},
	} {
		err := c.check(&exportFlags{Template: c.tmpl})
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s: %v, want it taken", c.tmpl, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad) || ExitCode(err) != ExitUsage):
			t.Errorf("%s: %v, want a usage error holding %s", c.tmpl, err, c.bad)
		}
	}
}

// showingCommands are the commands with -t that change nothing: their -t is left to the run
// (some print one of two shapes, by their arguments). Every other command with -t acts, and
// holds -t to its result's fields before acting (addActingExportFlags).
var showingCommands = map[string]bool{
	"volctl events": true, "volctl group status": true, "volctl nomad status": true,
	"volctl plugin probe": true, "volctl plugin status": true, "volctl status": true,
	"volctl validate": true, "volctl volume status": true, "volctl volume snapshot list": true,
}

// TestActingCommandsRefuseTemplateFieldsBeforeActing: every command that acts (register,
// create, plugin register, snapshot create, expand, detach, group run and stop, reconcile,
// claim, release, and their top-level forms) refuses -t '{{.nosuch}}' as its flags are read,
// exit 2, its state dir never opened. Before, only claim and release did: the others did
// their work and then failed, exit 2, `volctl register db.hcl -t '{{.nosuch}}'` leaving a
// volume registered that the script stopping at the error did not know of.
func TestActingCommandsRefuseTemplateFieldsBeforeActing(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios)
	f.lookupEnv = func(k string) (string, bool) {
		if k == "VOLCTL_STATE_DIR" {
			return stateDir, true
		}
		return "", false
	}
	var acting []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Flags().Lookup("template") == nil || showingCommands[c.CommandPath()] {
			return
		}
		acting = append(acting, c.CommandPath())
		args := append(strings.Fields(c.CommandPath())[1:], "x.hcl", "-t", "{{.nosuch}}")
		err := runCmd(t, NewRootCmd(f), args...)
		if ExitCode(err) != ExitUsage || err == nil || !strings.Contains(err.Error(), `no field "nosuch"`) && !strings.Contains(err.Error(), "reads a field of a list") ||
			!strings.Contains(err.Error(), "nothing was done") {
			t.Errorf("%s -t '{{.nosuch}}': %v (exit %d), want a usage error naming the field, saying nothing was done", c.CommandPath(), err, ExitCode(err))
		}
	}
	walk(NewRootCmd(f))
	for _, want := range []string{"volctl register", "volctl volume create", "volctl plugin register", "volctl volume snapshot create",
		"volctl volume expand", "volctl volume detach", "volctl group run", "volctl group stop", "volctl reconcile", "volctl volume claim", "volctl volume release"} {
		if !slices.Contains(acting, want) {
			t.Errorf("%s is not among the acting commands checked: %v", want, acting)
		}
	}
	if _, err := os.Stat(stateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the state dir was made or opened: %v", err)
	}
}

// TestTemplateFieldErrorSaysWhere: a field no result has, refused as the flag is read, was
// named but not placed, where -t's other errors and --jq's say the column: in a template of
// several reads of one name (.id twice, one of them in a range over a list) it says which.
func TestTemplateFieldErrorSaysWhere(t *testing.T) {
	for _, tt := range []struct {
		check      func(*exportFlags) error
		tmpl, want string
	}{
		{checkTemplateFields[engine.ClaimInfo], "{{.alloc}} {{.nosuch}}", `no field "nosuch" at column 14,`},
		{checkTemplateFields[engine.ClaimInfo], "{{.alloc}}\n  {{.targt_path}}", `no field "targt_path" (did you mean target_path?) at line 2, column 5,`},
		{checkTemplateFields[[]engine.VolumeInfo], "{{range .}}{{.id}}{{end}} é{{.id}}", "reads a field of a list, which has none, at column 30,"},
	} {
		err := tt.check(&exportFlags{Template: tt.tmpl})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want it saying %q", tt.tmpl, err, tt.want)
		}
	}
}
