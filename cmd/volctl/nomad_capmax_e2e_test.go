package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Nomad refuses an update of a registered volume whose capacity_max is below the capacity its
// copy has (CSIVolume.expandVolume: "max requested capacity ... less than or equal to
// current"), and its copy has more than volctl's record once Nomad grew the volume: a volume
// volctl created with a capacity_max, grown in Nomad past it (`nomad volume register` with a
// larger capacity_min and capacity_max), could not be registered by volctl again, while
// `--dry-run` said "Would update" and exited 0. The plan now says the registration would be
// refused, naming capacity_max and both sizes, before Nomad refuses it.
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadRegisterDryRunSaysNomadRefusesAMaxBelowItsCapacity(t *testing.T) {
	w, _ := startMemPluginInNomad(t, "mem")
	w.stepTo("volctl creates volume db (10MiB, capacity_max 15MiB) and hands it over")
	spec := strings.Replace(strings.Replace(dbSpec, `plugin_id = "hp"`, `plugin_id = "mem"`, 1), `capacity_min = "10MiB"`, "capacity_min = \"10MiB\"\ncapacity_max = \"15MiB\"", 1)
	w.writeFile("db.hcl", spec)
	w.volctl(0, "volume", "create", filepath.Join(w.dir, "db.hcl"))
	ext := strings.TrimSpace(w.volctl(0, "volume", "status", "db", "-t", "{{.external_id}}"))
	w.volctl(0, "nomad", "register", "db")

	w.stepTo("nomad volume register grows it to 20MiB, capacity_max 30MiB")
	w.editInNomad("grown.hcl", ext, `capacity_min = "20MiB"
capacity_max = "30MiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}`)

	w.stepTo("volctl nomad register --dry-run says Nomad would refuse it; the registration is refused")
	plan := w.volctl(4, "nomad", "register", "db", "--dry-run")
	for _, want := range []string{"capacity_max", "15MiB", "20MiB"} {
		if !strings.Contains(plan, want) {
			t.Errorf("register --dry-run: %s\nwant it to say %q", plan, want)
		}
	}
	// As the plan said: Nomad refuses it, for what its copy has (exit 4, as the plan).
	out := w.volctl(4, "nomad", "register", "db")
	for _, want := range []string{"max requested capacity", "past volctl's capacity_max of 15MiB", "`volctl nomad release db` records the size"} {
		if !strings.Contains(out, want) {
			t.Errorf("register: %s\nwant Nomad's refusal of the capacity_max, saying %q", out, want)
		}
	}
	w.stepTo("deregistered and taken back at 20MiB, the volume registers again (--force: the node expansion to 20MiB is owed)")
	w.nomad("volume", "deregister", "db")
	w.volctl(0, "nomad", "release", "db")
	// Owed the NodeExpandVolume Nomad never sent (the volume was on no node): refused without
	// --force, which this test, with no mounts, passes rather than claim it once.
	if out := w.volctl(4, "nomad", "register", "db"); !strings.Contains(out, "NodeExpandVolume to 20MiB") {
		t.Errorf("register after the take-back, owed a node expansion: %s", out)
	}
	if out := w.volctl(0, "nomad", "register", "db", "--force"); !strings.Contains(out, `Registered volume "db"`) {
		t.Errorf("register after the take-back: %s", out)
	}
	w.nomad("volume", "deregister", "db")
	w.volctl(0, "nomad", "release", "db")
	w.stopMemPluginInNomad("mem")
}
