package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestTemplateVariablesAreFollowedAsDeclared: a variable a -t template declares is bound to
// the type of what it holds, as text/template binds it (a range's element and index, a with's
// value, `$x := .field`, `$x = .`), and scoped as it scopes it (to the {{end}} of the if, with
// or range it is declared in): a field its type never has is refused, as one of . or $ is, and
// so is a field of a string, number or bool. Each template refused fails when run on a result
// of that type; each one taken whose variable may hold either of two types (set in a branch, by
// an earlier step of a range, before a break) or what a function gave runs on one. Before,
// only . and $ were followed: {{range $b := .binds}}{{$b.destinaton}}{{end}} was taken, and
// failed once there was a bind, and {{.target_path.x}} was taken too.
func TestTemplateVariablesAreFollowedAsDeclared(t *testing.T) {
	claim := engine.ClaimInfo{ID: 1, VolumeID: "db", Alloc: "web-0", Mode: "write", State: "published",
		TargetPath: "/t", Degraded: true, Binds: []engine.Bind{{Destination: "/a"}, {Destination: "/b", ReadOnly: true}}}
	vol := engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", Name: "db", PluginID: "mem"}, Parameters: map[string]string{"sku": "x"},
		Claims: []engine.ClaimInfo{claim}}
	ofClaim, ofVolumes, ofVolume := checkTemplateFields[engine.ClaimInfo], checkTemplateFields[[]engine.VolumeInfo], checkTemplateFields[engine.VolumeInfo]
	for _, c := range []struct {
		check  func(*exportFlags) error
		sample any
		tmpl   string
		bad    string // what the refusal says; "" when taken
		runs   bool   // a template taken runs on the sample
	}{
		{ofClaim, claim, "{{$c := .}}{{$c.nosuch}}", `$c has no field "nosuch"`, false},
		{ofClaim, claim, "{{range $i, $b := .binds}}{{$b.nosuch}}{{end}}", `$b has no field "nosuch"`, false},
		{ofClaim, claim, "{{range $b := .binds}}{{$b.destinaton}}{{end}}", `no field "destinaton" (did you mean destination?)`, false},
		{ofClaim, claim, "{{with $x := .binds}}{{$x.destination}}{{end}}", "$x.destination reads a field of a list", false},
		{ofClaim, claim, "{{$c := .}}{{if .degraded}}{{$c := .binds}}{{end}}{{$c.nosuch}}", `$c has no field "nosuch"`, false},
		{ofClaim, claim, "{{$c := .binds}}{{$c = .}}{{$c.destination}}", `$c has no field "destination"`, false},
		{ofClaim, claim, "{{range $i, $b := .binds}}{{$i.x}}{{end}}", "$i.x reads a field of a number ($i)", false},
		{ofClaim, claim, "{{.target_path.x}}", ".target_path.x reads a field of a string (.target_path)", false},
		{ofClaim, claim, "{{.releasing.x}}", "reads a field of a bool", false},
		{ofClaim, claim, "{{$p := .target_path}}{{$p.x}}", "$p.x reads a field of a string ($p)", false},
		{ofClaim, claim, "{{range $b := .binds}}{{with $d := $b.destination}}{{$d.x}}{{end}}{{end}}", "reads a field of a string ($d)", false},
		{ofVolumes, []engine.VolumeInfo{vol}, "{{range $v := .}}{{range $c := $v.claims}}{{$c.allc}}{{end}}{{end}}", `$c has no field "allc" (did you mean alloc?)`, false},
		{ofVolumes, []engine.VolumeInfo{vol}, "{{range $v := .}}{{$v.capacity_bytes.x}}{{end}}", "reads a field of a number", false},
		{ofVolume, vol, "{{range $k, $v := .parameters}}{{$k.x}}{{end}}", "$k.x reads a field of a string ($k)", false},
		{ofVolume, vol, "{{with $x := .claims}}{{$x.nosuch}}{{end}}", "$x.nosuch reads a field of a list", false},

		{ofClaim, claim, "{{$c := .}}{{$c.alloc}}", "", true},
		{ofClaim, claim, "{{range $i, $b := .binds}}{{$i}}{{$b.destination}}{{$.alloc}}{{end}}", "", true},
		{ofClaim, claim, "{{$c := .}}{{range $c := .binds}}{{$c.destination}}{{end}}{{$c.alloc}}", "", true},
		{ofClaim, claim, "{{$x := .binds}}{{if .degraded}}{{$x = .}}{{end}}{{$x.alloc}}", "", true},
		{ofClaim, claim, "{{$x := .}}{{range $i, $b := .binds}}{{if $i}}{{$x.destination}}{{end}}{{$x = $b}}{{end}}", "", true},
		{ofClaim, claim, "{{$x := .}}{{range .binds}}{{$x = .}}{{break}}{{end}}{{$x.destination}}", "", true},
		{ofClaim, claim, "{{range $b := .binds}}{{$b.read_only}}{{else}}{{$b}}{{end}}", "", true},
		{ofClaim, claim, `{{$x := index . "binds"}}{{range $x}}{{.destination}}{{end}}`, "", true},
		{ofClaim, claim, `{{$x := index . "binds"}}{{$x.nosuch}}`, "", false}, // a function's result: left to the run
		{ofVolume, vol, "{{range $k, $v := .parameters}}{{$k}}={{$v}}{{end}}", "", true},
	} {
		err := c.check(&exportFlags{Template: c.tmpl})
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s: %v, want it taken", c.tmpl, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad) || ExitCode(err) != ExitUsage):
			t.Errorf("%s: %v, want a usage error holding %q", c.tmpl, err, c.bad)
		}
		var out bytes.Buffer
		werr := (&exportFlags{Template: c.tmpl}).Write(context.Background(), &out, c.sample)
		switch {
		case c.bad != "" && werr == nil:
			t.Errorf("%s: refused, yet it runs on %T: %q", c.tmpl, c.sample, out.String())
		case c.runs && werr != nil:
			t.Errorf("%s: taken, and fails on %T: %v", c.tmpl, c.sample, werr)
		}
	}
}

// TestTemplateVariableTyposAreRefusedBeforeAnything: through the command line, a claim's -t
// reading a field no claim has through a variable ({{with $c := .}}{{$c.targt_path}}{{end}})
// or a field of a string is refused as the flag is read, exit 2, nothing claimed, and a list's
// (volume status) is refused on a state with no volume. Before, the claim was made and then the
// command failed, and the list printed nothing, exit 0, until a volume was created.
func TestTemplateVariableTyposAreRefusedBeforeAnything(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	for _, c := range []struct{ tmpl, want string }{
		{"{{with $c := .}}{{$c.targt_path}}{{end}}", `no field "targt_path" (did you mean target_path?)`},
		{"{{$p := .target_path}}{{$p.dir}}", "reads a field of a string ($p)"},
	} {
		code, out, errOut := h.runReported("volume", "claim", "db", "--alloc", "web-0", "-t", c.tmpl)
		if code != ExitUsage || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "nothing was done") {
			t.Errorf("volume claim -t '%s': exit %d, stderr %q; want exit 2 saying %q, nothing was done", c.tmpl, code, errOut, c.want)
		}
		if out != "" {
			t.Errorf("volume claim -t '%s' printed %q", c.tmpl, out)
		}
	}
	claims, err := h.e.Claims(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 0 {
		t.Errorf("a claim was made: %+v", claims)
	}
	state := filepath.Join(t.TempDir(), "state")
	out, err := execRoot(t, "--state-dir", state, "volume", "status", "-t", "{{range $v := .}}{{$v.capacity_bytes.x}}{{end}}")
	if ExitCode(err) != ExitUsage || err == nil || !strings.Contains(err.Error(), "reads a field of a number") || out != "" {
		t.Errorf("volume status -t '{{range $v := .}}{{$v.capacity_bytes.x}}{{end}}' on an empty state: %v (exit %d), stdout %q; want exit 2 naming the field of a number",
			err, ExitCode(err), out)
	}
}

// TestNoOpExpandOrDetachWhoseTemplateFailsDidNothing: an expand to the size the volume has, and
// a detach (not forced) of a volume with no claims, change nothing; a -t failing on their result
// exits 2, as a release that released nothing, its error not saying the volume was expanded or
// claims released. An expand that grew the volume and a detach that released a claim keep exit
// 1, "only printing it failed", and so does a forced detach of a volume with no claims (it sends
// ControllerUnpublishVolume whatever the records say). Before, the no-op expand said `volume
// "db" expanded; only printing it failed` and the detach `0 claim(s) released; only printing it
// failed`, exit 1, an expansion and a release a script's log recorded that never happened.
func TestNoOpExpandOrDetachWhoseTemplateFailsDidNothing(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	const failing = `{{index . "nosuch"}}` // taken as the flag is read, fails on every result
	code, _, errOut := h.runReported("volume", "expand", "db", "--size", "2GiB", "-t", failing)
	if code != ExitError || !strings.Contains(errOut, `volume "db" expanded; only printing it failed`) {
		t.Errorf("the expand that grew the volume, its template failing: exit %d, stderr %q; want 1 saying it expanded", code, errOut)
	}
	code, out, errOut := h.runReported("volume", "expand", "db", "--size", "2GiB", "-t", failing)
	if code != ExitUsage || strings.Contains(errOut, "expanded") || strings.Contains(errOut, "only printing it failed") || out != "" {
		t.Errorf("volume expand db --size 2GiB (already 2GiB) -t '%s': exit %d, stdout %q, stderr %q; want 2, not saying it expanded",
			failing, code, out, errOut)
	}

	code, out, errOut = h.runReported("volume", "detach", "db", "--yes", "-t", failing)
	if code != ExitUsage || strings.Contains(errOut, "released") || strings.Contains(errOut, "only printing it failed") || out != "" {
		t.Errorf("volume detach db (no claims) -t '%s': exit %d, stdout %q, stderr %q; want 2, not saying claims were released",
			failing, code, out, errOut)
	}
	code, _, errOut = h.runReported("volume", "detach", "db", "--yes", "--force", "-t", failing)
	if code != ExitError || !strings.Contains(errOut, "0 claim(s) released; only printing it failed") {
		t.Errorf("volume detach db --force (no claims) -t '%s': exit %d, stderr %q; want 1: a forced detach acts all the same", failing, code, errOut)
	}
	h.claim(t, "db", "web-0")
	code, _, errOut = h.runReported("volume", "detach", "db", "--yes", "-t", failing)
	if code != ExitError || !strings.Contains(errOut, "1 claim(s) released; only printing it failed") {
		t.Errorf("the detach that released a claim, its template failing: exit %d, stderr %q; want 1 saying it released one", code, errOut)
	}
}
