package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestStatusOfOneVolumeTakesAVolumesTemplate: `volctl status ID` is `volctl volume status ID`
// and prints one volume's status, but its -t was checked as the flag was set against the
// summary `volctl status` prints without an ID: an honest {{.id}} was refused, exit 2 ("the
// result has no field "id" ... Its fields are plugins, volumes, claims, unsettled_claims"),
// and a summary's field passed the flag. Each is held to what the arguments make it print.
// Not parallel: it builds command trees, whose cobra template functions are global.
func TestStatusOfOneVolumeTakesAVolumesTemplate(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	if code, out, errOut := h.runReported("status", "db", "-t", "{{.id}} {{.plugin_id}}"); code != 0 || out != "db mem" {
		t.Errorf("volctl status db -t '{{.id}} {{.plugin_id}}': exit %d, printed %q, stderr %q; want exit 0 and %q", code, out, errOut, "db mem")
	}
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"status", "db", "-t", "{{range .plugins}}{{.id}}{{end}}"}, `"plugins"`}, // the summary's field, not a volume's
		{[]string{"status", "-t", "{{.id}}"}, `"id"`},                                     // a volume's field, not the summary's
	} {
		code, out, errOut := h.runReported(c.args...)
		if code != ExitUsage || out != "" || !strings.Contains(errOut, c.field) {
			t.Errorf("volctl %s: exit %d, printed %q, stderr %q; want exit 2 naming %s", strings.Join(c.args, " "), code, out, errOut, c.field)
		}
	}
	if code, out, errOut := h.runReported("status", "-t", "{{range .plugins}}{{.id}}{{end}} {{.volumes.total}}"); code != 0 || out != "mem 1" {
		t.Errorf("volctl status -t: exit %d, printed %q, stderr %q; want exit 0 and %q", code, out, errOut, "mem 1")
	}
}
