package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A volume handed over to Nomad, deregistered there and registered again by hand in another
// namespace (the same storage: plugin and external ID) is still Nomad's, and `volctl nomad
// release` refuses it (exit 4), as `volctl nomad register` does. `volctl nomad status` warns
// of the twin; before, its note for the handed-over row said that `volctl nomad release db`
// takes it back, or `volctl nomad register db` hands it over again: advice that, run as
// written, was refused. Each command the note says works must work. Found by helper review64.
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestStatusNoteOfATwinAdvisesNoCommandThatIsRefused(t *testing.T) {
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to run the end-to-end test against a real agent")
	}
	w, _ := startMemPluginInNomad(t, "mem")
	ext := w.createMemDB()

	w.stepTo("volctl hands db over; Nomad deregisters it and registers its storage by hand in namespace team")
	w.volctl(0, "nomad", "register", "db")
	w.nomad("namespace", "apply", "team")
	w.nomad("volume", "deregister", "db")
	w.writeFile("team.hcl", `id = "db"
name = "db"
type = "csi"
plugin_id = "mem"
external_id = "`+ext+`"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`)
	w.nomad("volume", "register", "-namespace", "team", filepath.Join(w.dir, "team.hcl"))

	w.stepTo("volctl nomad status: each command its note says works, run as written")
	status := w.volctl(0, "nomad", "status", "db")
	t.Logf("volctl nomad status db:\n%s", status)
	for _, advice := range []struct{ cmd, says string }{
		{"volctl nomad release db", "takes it back"},
		{"volctl nomad register db", "hands it over again"},
	} {
		claim := regexp.MustCompile("`" + regexp.QuoteMeta(advice.cmd) + "` " + regexp.QuoteMeta(advice.says))
		if !claim.MatchString(status) {
			continue
		}
		code, out := w.volctlExit(strings.Fields(advice.cmd)[1:]...)
		if code != 0 {
			t.Errorf("volctl nomad status says %q %s, while Nomad has the volume's storage as volume db in namespace team; run as written it exits %d:\n%s",
				"`"+advice.cmd+"`", advice.says, code, out)
		}
	}
	w.nomad("volume", "deregister", "-namespace", "team", "db")
	w.volctl(0, "nomad", "release", "db")
	w.stopMemPluginInNomad("mem")
}

// `volctl nomad register --dry-run` exits 4 when a registration would not go through, so that
// a script or CI can gate the handover on it. A volume whose namespace (here NOMAD_NAMESPACE's,
// for a volume of the default one) Nomad does not have is refused by Nomad ("nonexistent
// namespace"), and the registration fails; before, its plan said it would go through (exit
// 0). Found by helper review64.
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestDryRunInANamespaceNomadLacksSaysItWouldFail(t *testing.T) {
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to run the end-to-end test against a real agent")
	}
	w, _ := startMemPluginInNomad(t, "mem")
	w.createMemDB()
	w.stepTo("NOMAD_NAMESPACE names a namespace Nomad does not have: the plan, then the registration")
	w.env = []string{"NOMAD_NAMESPACE=nosuch"}
	planCode, plan := w.volctlExit("nomad", "register", "db", "--dry-run")
	code, out := w.volctlExit("nomad", "register", "db")
	w.env = nil
	t.Logf("plan: exit %d: %s", planCode, plan)
	t.Logf("registration: exit %d: %s", code, out)
	if code == 0 {
		t.Fatalf("the registration into namespace nosuch, which Nomad lacks, went through: this tests nothing\n%s", out)
	}
	if planCode != 4 || !strings.Contains(plan, "Nomad has no namespace nosuch") {
		t.Errorf("volctl nomad register --dry-run exits %d, while the registration it plans fails (exit %d); want exit 4, its plan saying Nomad has no namespace nosuch:\n%s", planCode, code, plan)
	}
	w.stopMemPluginInNomad("mem")
}
