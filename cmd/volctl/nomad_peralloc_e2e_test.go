package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

// perAllocGroup is group web of count 2, each alloc claiming its own volume of the per_alloc
// source "data": data[0] and data[1], as volctl's engine and Nomad's scheduler both name them.
const perAllocGroup = `group "web" {
  count = 2
  volume "data" {
    type            = "csi"
    source          = "data"
    per_alloc       = true
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume      = "data"
    destination = "/srv/web-{index}"
  }
}
`

// TestNomadPerAllocVolumesAreWhatTheJobAsks hands the per_alloc volumes of a group over to a
// real Nomad and asks Nomad's scheduler (nomad job plan) to place the job volctl export nomad
// writes for the group: each alloc must find its own volume, as volctl registered it.
//
// Opt-in: NOMAD_BIN names a Nomad binary; the plan's exec driver is there only as root. No
// mounts.
func TestNomadPerAllocVolumesAreWhatTheJobAsks(t *testing.T) {
	if os.Getenv("NOMAD_BIN") != "" && os.Geteuid() != 0 {
		t.Skip("the job's exec tasks are placed only on a Nomad client that runs as root")
	}
	w, _ := startMemPluginInNomad(t, "mem")
	w.stepTo("volctl creates data[0] and data[1], and hands them over")
	for i := range 2 {
		id := fmt.Sprintf("data[%d]", i)
		w.writeFile(fmt.Sprintf("data%d.hcl", i), strings.NewReplacer(`id = "db"`, fmt.Sprintf("id = %q", id), `name = "db"`, fmt.Sprintf("name = %q", id),
			`plugin_id = "hp"`, `plugin_id = "mem"`).Replace(dbSpec))
		w.volctl(0, "volume", "create", filepath.Join(w.dir, fmt.Sprintf("data%d.hcl", i)))
	}
	w.volctl(0, "nomad", "register", "data[0]", "data[1]")
	w.stepTo("nomad job plan of the group's job")
	g, diags := spec.NewParser().ParseGroup("web.hcl", []byte(perAllocGroup))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	job, _, err := nomad.GroupJob(*g, nomad.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// nomad job plan exits 1 when it would change the cluster, as placing a new job does.
	plan := func(name, job string) string {
		t.Helper()
		w.writeFile(name, job)
		out, err := w.tryNomad("job", "plan", filepath.Join(w.dir, name))
		if err == nil || !strings.Contains(out, "Scheduler dry-run:") {
			t.Fatalf("nomad job plan %s: %v\n%s", name, err, out)
		}
		return out
	}
	if out := plan("web.nomad.hcl", string(job)); !strings.Contains(out, "All tasks successfully allocated") {
		t.Errorf("nomad job plan of the job volctl export nomad writes for group web, its per_alloc volumes handed over: Nomad would not place it:\n%s", out)
	}
	// The plan checks the volumes: a third alloc's, data[2], is not in Nomad.
	three := strings.Replace(string(job), "count = 2", "count = 3", 1)
	if out := plan("web3.nomad.hcl", three); !strings.Contains(out, "missing CSI volume(s) data[2]") {
		t.Errorf("nomad job plan of the job of count 3, no data[2] in Nomad: want it refused for the missing volume:\n%s", out)
	}
	w.nomad("volume", "deregister", "data[0]")
	w.nomad("volume", "deregister", "data[1]")
	w.volctl(0, "nomad", "release", "--all")
	w.stopMemPluginInNomad("mem")
}
