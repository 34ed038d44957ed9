package cli

import (
	"strings"
	"testing"

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

// TestTemplateFieldsCheckedAreTheResults: only what is read from the result itself is held to
// its fields; what a range or with reads from something else, and a field reached by index,
// are left to the run, as is a field left out when empty.
func TestTemplateFieldsCheckedAreTheResults(t *testing.T) {
	for tmpl, bad := range map[string]string{
		"{{.target_path}}":                                        "",
		"{{.alloc}} {{.state}} {{$.volume_id}}":                   "",
		"{{range .binds}}{{.destination}} {{.nosuch}}{{end}}":     "",
		"{{with .last_error}}{{.}}{{else}}{{.state}}{{end}}":      "",
		`{{index . "group"}} {{if .degraded}}{{.outcome}}{{end}}`: "",
		"{{$c := .}}{{$c.nosuch}}":                                "",
		"{{.freed_at}}":                                           "",
		"{{.Alloc}}":                                              `"Alloc"`,
		"{{if .state}}{{.targt_path}}{{end}}":                     `"targt_path"`,
		"{{range .binds}}{{$.nosuch}}{{end}}":                     `"nosuch"`,
		"{{with .binds}}x{{else}}{{.nope}}{{end}}":                `"nope"`,
		"{{.target_path.x}} {{(.volume).x}} {{.a}} {{.a}}":        `"volume", "a"`,
	} {
		err := checkTemplateFields[engine.ClaimInfo](&exportFlags{Template: tmpl})
		switch {
		case bad == "" && err != nil:
			t.Errorf("%s: %v, want it taken", tmpl, err)
		case bad != "" && (err == nil || !strings.Contains(err.Error(), "no field "+bad+",") && !strings.Contains(err.Error(), "no field "+bad+" ")):
			t.Errorf("%s: %v, want it refused naming %s", tmpl, err, bad)
		}
	}
}
