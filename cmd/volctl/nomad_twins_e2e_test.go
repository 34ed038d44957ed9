package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Nomad has volume db's storage registered already as volume db of namespace team (`nomad
// volume register` of a file naming it, as a user moving by hand does): volctl nomad register
// db registered it in the default namespace too, exit 0, and Nomad had two volumes of one
// storage, whose allocs it would let write it at once (its access modes hold per volume). Now
// the registration is refused, exit 4, naming both; --dry-run --json says it would be; Nomad
// has no volume db in the default namespace after. Against a real Nomad, whose list of every
// namespace's volumes volctl reads (Nomad 2.0.5 answers one filtered by plugin_id in namespace
// "*" with none, so volctl filters it itself).
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadRegisterRefusesAStorageNomadHasAsAnotherVolume(t *testing.T) {
	w, _ := startMemPluginInNomad(t, "mem")
	w.stepTo("volctl creates volume db; Nomad gets its storage as volume db of namespace team")
	ext := w.createMemDB()
	w.nomad("namespace", "apply", "team")
	w.writeFile("team.hcl", fmt.Sprintf(`id = "db"
name = "db"
namespace = "team"
type = "csi"
plugin_id = "mem"
external_id = %q
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`, ext))
	w.nomad("volume", "register", filepath.Join(w.dir, "team.hcl"))
	// Why volctl lists every volume and filters by plugin itself: this Nomad answers a list
	// filtered by plugin_id in namespace "*" with none. Should a Nomad answer it, the request
	// may ask for the plugin's volumes alone.
	var all, byPlugin []struct{ ID, Namespace, PluginID string }
	if !w.getJSON("/v1/volumes?type=csi&namespace=*", &all) || len(all) != 1 || all[0].Namespace != "team" {
		t.Errorf("Nomad's list of every namespace's volumes: %+v, want team's db", all)
	}
	switch {
	case !w.getJSON("/v1/volumes?type=csi&namespace=*&plugin_id=mem", &byPlugin):
		t.Errorf("Nomad's list of plugin mem's volumes in namespace * failed")
	case len(byPlugin) > 0:
		t.Logf("%s lists volumes by plugin_id in namespace *: %+v", w.version, byPlugin)
	default:
		t.Logf("%s answers a list by plugin_id in namespace * with none", w.version)
	}

	w.stepTo("volctl nomad register db --dry-run and register: refused, exit 4, naming both")
	var plans []struct {
		WouldFail []string `json:"would_fail"`
	}
	// The plan on stdout, the error after it on stderr.
	if err := json.NewDecoder(strings.NewReader(w.volctl(4, "nomad", "register", "db", "--dry-run", "--json"))).Decode(&plans); err != nil || len(plans) != 1 ||
		!strings.Contains(strings.Join(plans[0].WouldFail, "; "), "storage") {
		t.Errorf("register --dry-run --json: %+v (%v); want its would_fail to say Nomad has its storage as another volume", plans, err)
	}
	out := w.volctl(4, "nomad", "register", "db")
	for _, want := range []string{`volume "db" in namespace team`, `external ID "` + ext + `"`, "nomad volume deregister -namespace team db"} {
		if !strings.Contains(out, want) {
			t.Errorf("register: %s\nwant it to say %q", out, want)
		}
	}
	if got, err := w.tryNomad("volume", "status", "-namespace", "default", "db"); err == nil {
		t.Errorf("Nomad has volume db in the default namespace too:\n%s", got)
	}

	w.stepTo("volctl nomad status names Nomad's volume of db's storage")
	var st []struct {
		Twins []struct{ ID, Namespace string } `json:"twins"`
	}
	if err := json.NewDecoder(strings.NewReader(w.volctl(0, "nomad", "status", "db", "--json"))).Decode(&st); err != nil || len(st) != 1 ||
		len(st[0].Twins) != 1 || st[0].Twins[0].ID != "db" || st[0].Twins[0].Namespace != "team" {
		t.Errorf("nomad status --json: %+v (%v); want twins naming db of namespace team", st, err)
	}
	if out := w.volctl(0, "nomad", "status", "db"); !strings.Contains(out, "nomad volume deregister -namespace team db") {
		t.Errorf("nomad status: %s\nwant a warning naming Nomad's volume of its storage and its deregister", out)
	}

	w.stepTo("once Nomad's volume of it is deregistered, volctl registers it")
	w.nomad("volume", "deregister", "-namespace", "team", "db")
	if out := w.volctl(0, "nomad", "register", "db"); !strings.Contains(out, `Registered volume "db"`) {
		t.Errorf("register once team's volume is gone: %s", out)
	}
	w.nomad("volume", "deregister", "db")
	w.volctl(0, "nomad", "release", "db")
	w.stopMemPluginInNomad("mem")
}
