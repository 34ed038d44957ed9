package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestFieldReadInADefinedTemplateIsRefusedBeforeTheClaim: `volctl volume claim v --alloc a
// -t '{{define "t"}}{{.nosuch}}{{end}}{{template "t" .}}'` claimed the volume, published it,
// and only then failed on printing it, exit 1 ("only printing it failed"), leaving a script
// that stops at the error with a claim it does not know it holds. The check of -t's fields
// (templateFieldsError) walked only the template's main tree: a {{template}} call's pipeline
// was checked, the body of the template it calls never was, so a typo there (or `$.nosuch`,
// $ being the called template's argument) passed the check. docs/json.md: "A `-t` of any of
// these commands that reads a field the result never has ... through a variable the template
// declares too ... in a branch that may not run too ... is refused as the flag is read, before
// anything is done, exit 2, naming the field"; only "a template it calls that is not defined"
// is left to the run. Found by helper review73.
func TestFieldReadInADefinedTemplateIsRefusedBeforeTheClaim(t *testing.T) {
	requireMount(t)
	for _, tmpl := range []string{
		`{{define "t"}}{{.nosuch}}{{end}}{{template "t" .}}`,
		`{{define "t"}}{{$.nosuch}}{{end}}{{template "t" .}}`,
		`{{template "t" .}}{{define "t"}}{{.target}}{{end}}`,
		`{{block "t" .}}{{.target}}{{end}}`,
	} {
		t.Run(tmpl, func(t *testing.T) {
			h := newCLIHarness(t)
			h.createVolume(t, "v", spec.SingleNodeWriter)
			t.Cleanup(func() { h.e.Release(h.ctx, "v", "a") })
			code, out, errOut := h.runReported("volume", "claim", "v", "--alloc", "a", "-t", tmpl)
			v, err := h.e.Volume(h.ctx, "v")
			if err != nil {
				t.Fatal(err)
			}
			if code != ExitUsage || len(v.Claims) != 0 {
				t.Errorf("volume claim -t %s: exit %d (want %d, refused as the flag is read), %d claim(s) left held\nstdout: %q\nstderr: %s",
					tmpl, code, ExitUsage, len(v.Claims), out, errOut)
			}
		})
	}
}

// TestFieldReadInADefinedTemplateFailsOnEveryState: the same read in a command that only
// reads. `volctl volume status v -t '{{define "c"}}{{.alocc}}{{end}}{{range .claims}}{{template
// "c" .}}{{end}}'` (a typo of alloc in the template printing each claim) printed nothing, exit
// 0, while the volume had no claims, and failed, exit 2, from the first claim on: a CI
// script's typo passed until then. docs/json.md: a reading command's template reading a field
// the result never has is refused "before anything is read, whatever the state holds ... not
// exit 0 until the first volume is created"; the fields of a claim are known as well inside a
// defined template as outside it ({{range .claims}}{{.alocc}}{{end}} is refused). Found by helper review73.
func TestFieldReadInADefinedTemplateFailsOnEveryState(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "v", spec.SingleNodeWriter)
	inline := `{{range .claims}}{{.alocc}}{{end}}`
	if code, _, errOut := h.runReported("volume", "status", "v", "-t", inline); code != ExitUsage {
		t.Fatalf("the inline form %s: exit %d, want %d (the check this test compares with): %s", inline, code, ExitUsage, errOut)
	}
	for _, tmpl := range []string{
		`{{define "c"}}{{.alocc}}{{end}}{{range .claims}}{{template "c" .}}{{end}}`,
		`{{define "c"}}{{$.alocc}}{{end}}{{range .claims}}{{template "c" .}}{{end}}`,
		`{{define "cs"}}{{range .}}{{.alocc}}{{end}}{{end}}{{template "cs" .claims}}`,
	} {
		code, out, errOut := h.runReported("volume", "status", "v", "-t", tmpl)
		if code != ExitUsage || !strings.Contains(errOut, "alocc") {
			t.Errorf("volume status v -t %s on a volume with no claims: exit %d, stdout %q, stderr %q; want exit %d naming the field, as %s is",
				tmpl, code, out, errOut, ExitUsage, inline)
		}
	}
}

// TestIndexInAConditionOfAnAbsentObjectIsNothing: `volctl volume status v -t '{{if index .
// "parameters" "skuname"}}y{{else}}n{{end}}'` of a volume without parameters failed, exit 2,
// "error calling index: index of nil pointer", a pointer the template's author never wrote:
// index's lenient form in a condition (lenientIndex) gave the zero of the first key the map
// lacked and then indexed that nothing with the next key. docs/json.md: "read a field that may
// be absent with {{with index . "field"}}...{{end}}, as in the condition of a with, if or
// range a key the map lacks is nothing"; the map lacks "parameters" (absent when empty), so
// the condition is nothing, false, as {{with index . "parameters"}} is. Found by helper review73.
func TestIndexInAConditionOfAnAbsentObjectIsNothing(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "v", spec.SingleNodeWriter)
	for tmpl, want := range map[string]string{
		`{{if index . "parameters" "skuname"}}y{{else}}n{{end}}`:           "n",
		`{{with index . "handover" "address"}}{{.}}{{else}}local{{end}}`:   "local",
		`{{range index . "topology_request" "required"}}x{{else}}-{{end}}`: "-",
	} {
		code, out, errOut := h.runReported("volume", "status", "v", "-t", tmpl)
		if code != ExitOK || out != want {
			t.Errorf("volume status v -t %s: exit %d, stdout %q, stderr %q; want %q, exit 0 (the key the map lacks is nothing in a condition)",
				tmpl, code, out, errOut, want)
		}
	}
}
