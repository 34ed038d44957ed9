package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A handover's mark keeps the servers of the cluster its registration went to, as the real
// Nomad names them (GET /v1/status/peers, which no ACL guards): what the fakes of the cli and
// nomad tests answer is what Nomad answers. The honest case against one cluster: nomad
// status and register --dry-run, which ask its leader twice and its servers now, read it as
// before (exit 0), and the volume, deregistered there, is taken back (a 404 from the cluster
// whose servers the mark names).
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadHandoverRecordsTheClustersServers(t *testing.T) {
	w, _ := startMemPluginInNomad(t, "mem")
	w.stepTo("volctl creates volume db and hands it over")
	w.writeFile("db.hcl", strings.Replace(dbSpec, `plugin_id = "hp"`, `plugin_id = "mem"`, 1))
	w.volctl(0, "volume", "create", filepath.Join(w.dir, "db.hcl"))
	w.volctl(0, "nomad", "register", "db")

	var peers []string
	if !w.getJSON("/v1/status/peers", &peers) || len(peers) == 0 {
		t.Fatalf("Nomad's /v1/status/peers: %q", peers)
	}
	var st struct {
		Handover struct {
			Peers []string `json:"nomad_peers"`
		} `json:"handover"`
	}
	if err := json.Unmarshal([]byte(w.volctl(0, "volume", "status", "db", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	slices.Sort(peers)
	if !slices.Equal(st.Handover.Peers, peers) {
		t.Errorf("the mark's servers %q, want Nomad's %q", st.Handover.Peers, peers)
	}

	w.stepTo("nomad status and register --dry-run read it as before")
	if out := w.volctl(0, "nomad", "status", "db"); strings.Contains(out, "cluster") {
		t.Errorf("nomad status against one cluster: %s", out)
	}
	if out := w.volctl(0, "nomad", "register", "db", "--dry-run"); !strings.Contains(out, "nothing would change") {
		t.Errorf("register --dry-run against one cluster: %s", out)
	}
	w.stepTo("deregistered in Nomad, taken back")
	w.nomad("volume", "deregister", "db")
	if out := w.volctl(0, "nomad", "release", "db"); !strings.Contains(out, `Took volume "db" back`) {
		t.Errorf("release: %s", out)
	}
	w.stopMemPluginInNomad("mem")
}
