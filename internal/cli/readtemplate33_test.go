package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestReadingTemplatesAreCheckedWhateverTheState: a reading command's -t that reads a field its
// result never has ran only on a result: on an empty state (no volume, plugin, group or event
// yet) a range over the list never ran it, exit 0, and the same command failed, exit 2, once
// there was one, so a CI script's typo passed until the day it mattered. Each command family
// that prints refuses it at once, whatever the state, before reading anything (snapshot list,
// plugin probe, nomad status and validate before asking a plugin, Nomad or a file); the same
// template with the field spelled right runs on the empty state, exit 0.
func TestReadingTemplatesAreCheckedWhateverTheState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	specFile := filepath.Join(dir, "v.hcl") // never read: the template is refused first
	for _, c := range []struct {
		args       []string
		bad, field string
		good       string // "" for a command that cannot run here without a plugin, Nomad or a wait
	}{
		{[]string{"volume", "status"}, "{{range .}}{{.idd}}{{end}}", `"idd"`, "{{range .}}{{.id}}{{end}}"},
		{[]string{"volume", "ls"}, "{{range .}}{{.plugin}}{{end}}", `"plugin"`, "{{range .}}{{.plugin_id}}{{end}}"},
		{[]string{"volume", "status", "db"}, "{{.idd}}", `"idd"`, ""},
		{[]string{"plugin", "status"}, "{{range .}}{{.health}}{{end}}", `"health"`, "{{range .}}{{.healthy}}{{end}}"},
		{[]string{"plugin", "status", "mem"}, "{{.health}}", `"health"`, ""},
		{[]string{"group", "status"}, "{{range .}}{{.nme}}{{end}}", `"nme"`, "{{range .}}{{.name}}{{end}}"},
		{[]string{"group", "status", "web"}, "{{.nme}}", `"nme"`, ""},
		{[]string{"events"}, "{{range .}}{{.kindd}}{{end}}", `"kindd"`, "{{range .}}{{.kind}}{{end}}"},
		{[]string{"events", "--follow"}, "{{.kindd}}", `"kindd"`, ""},
		{[]string{"status"}, "{{range .plugins}}{{.idd}}{{end}}", `"idd"`, "{{range .plugins}}{{.id}}{{end}}"},
		{[]string{"volume", "snapshot", "list", "mem"}, "{{range .snapshots}}{{.idd}}{{end}}", `"idd"`, ""},
		{[]string{"plugin", "probe", "--socket", filepath.Join(dir, "none.sock")}, "{{.nme}}", `"nme"`, ""},
		{[]string{"nomad", "status"}, "{{range .}}{{.idd}}{{end}}", `"idd"`, ""},
		{[]string{"validate", specFile}, "{{range .}}{{.sevrity}}{{end}}", `"sevrity"`, ""},
	} {
		name := strings.Join(c.args, " ")
		args := append([]string{"--state-dir", state}, c.args...)
		out, err := execRoot(t, append(args, "-t", c.bad)...)
		if ExitCode(err) != ExitUsage || err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("volctl %s -t '%s' on an empty state: %v (exit %d); want exit 2 naming %s", name, c.bad, err, ExitCode(err), c.field)
		}
		if out != "" {
			t.Errorf("volctl %s -t '%s' printed %q", name, c.bad, out)
		}
		if c.good == "" {
			continue
		}
		if _, err := execRoot(t, append(args, "-t", c.good)...); err != nil {
			t.Errorf("volctl %s -t '%s' on an empty state: %v (exit %d); want it to run", name, c.good, err, ExitCode(err))
		}
	}
}

// The honest case: templates reading what a real volume's rows have, the list's and one
// volume's, are not refused, and print.
func TestReadingTemplatesFineOnRealRowsRun(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	for _, c := range []struct{ id, tmpl, want string }{
		{"", `{{range .}}{{.id}} {{.plugin_id}} {{.write_claims}}{{"\n"}}{{end}}`, "db mem 0\n"},
		{"db", `{{.id}} {{.plugin_id}} {{range .capabilities}}{{.access_mode}}{{end}}{{range .claims}}{{.alloc}}{{end}}`, "db mem single-node-writer"},
	} {
		ios, _, out, _ := iostreams.Test()
		err := volumeStatusRun(h.ctx, &VolumeStatusOptions{IO: ios, Engine: h.engine, ID: c.id, Exporter: exportFlags{Template: c.tmpl}})
		if err != nil || out.String() != c.want {
			t.Errorf("volume status %s -t '%s': %v, printed %q; want %q", c.id, c.tmpl, err, out, c.want)
		}
	}
}
