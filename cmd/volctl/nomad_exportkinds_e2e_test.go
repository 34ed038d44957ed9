package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestNomadRegistersTheExportOfEveryVolumeKind gives the file `volctl export nomad` writes for
// each kind of volume to the real `nomad volume register`, against a real agent running the
// volume's plugin: one volctl created (with capacity_min and capacity_max, parameters), one it
// registered (with the plugin's context), per_alloc volumes (IDs NAME[N]), one created from a
// snapshot and one cloned (their snapshot_id and clone_id left out: a register file), one
// with a required and a preferred topology, one with mount options, and one with secrets
// (written as placeholders without --include-secrets, which export says, and as they are
// with it). Nomad must take each file as written and store what volctl has; nothing volctl
// exported is refused but a volume of a block-device capability beside another, which export
// and `volctl nomad register` say Nomad may refuse, and it does. Then each is handed over with
// `volctl nomad register` and taken back.
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadRegistersTheExportOfEveryVolumeKind(t *testing.T) {
	w, _, mem := startMemPluginInNomadWith(t, "mem", func(cfg *csitest.MemConfig) {
		cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "z1"}}
	})
	w.stepTo("volctl creates, registers and clones a volume of each kind")
	body := func(id, rest string) string {
		return fmt.Sprintf("id = %q\nname = %q\ntype = \"csi\"\nplugin_id = \"mem\"\n%s\n", id, strings.NewReplacer("[", "-", "]", "").Replace(id), rest)
	}
	fsWriter := "capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	create := func(id, rest string) {
		t.Helper()
		w.writeFile("spec.hcl", body(id, rest))
		w.volctl(0, "volume", "create", filepath.Join(w.dir, "spec.hcl"))
	}
	create("made", `capacity_min = "10MiB"
capacity_max = "20MiB"
parameters = { tier = "gold" }
`+fsWriter+`capability {
  access_mode = "multi-node-reader-only"
  attachment_mode = "file-system"
}`)
	mem.AddVolume(csi.Volume{ID: "ext-found", CapacityBytes: 5 << 20, Context: map[string]string{"share": "/exports/found"}})
	w.writeFile("spec.hcl", body("found", "external_id = \"ext-found\"\ncontext = { share = \"/exports/found\" }\n"+fsWriter))
	w.volctl(0, "volume", "register", filepath.Join(w.dir, "spec.hcl"))
	create("logs[0]", fsWriter)
	create("logs[1]", fsWriter)
	w.volctl(0, "volume", "snapshot", "create", "made", "snap-1")
	snap := strings.TrimSpace(w.volctl(0, "volume", "snapshot", "list", "--plugin", "mem", "-t", `{{range .snapshots}}{{.id}}{{end}}`))
	create("restored", fmt.Sprintf("snapshot_id = %q\n%s", snap, fsWriter))
	create("cloned", "clone_id = \"made\"\n"+fsWriter)
	create("placed", `topology_request {
  required {
    topology { segments = { zone = "z1" } }
  }
  preferred {
    topology { segments = { zone = "z1" } }
  }
}
`+fsWriter)
	create("mounted", "mount_options {\n  fs_type = \"ext4\"\n  mount_flags = [\"noatime\"]\n}\n"+fsWriter)
	create("locked", "secrets = { token = \"t0k3n\" }\n"+fsWriter)
	blockWriter := strings.Replace(fsWriter, "file-system", "block-device", 1)
	create("raw", blockWriter)
	create("both", blockWriter+fsWriter)
	ids := []string{"made", "found", "logs[0]", "logs[1]", "restored", "cloned", "placed", "mounted", "locked", "raw", "both"}

	for _, secrets := range []bool{false, true} {
		out := filepath.Join(w.dir, fmt.Sprintf("out-%v", secrets))
		args := append([]string{"export", "nomad", "--out", out}, ids...)
		if secrets {
			args = append(args, "--include-secrets")
		}
		notes := w.volctl(0, args...)
		if said := strings.Contains(notes, `volume "locked": 1 secret(s) written as [REDACTED]`) &&
			strings.Contains(notes, `volume "mounted": 1 mount flag(s) written as [REDACTED]`); said == secrets {
			t.Errorf("export nomad (include secrets %v) says of the placeholders: %s", secrets, notes)
		}
		ns := fmt.Sprintf("kinds-%v", secrets)
		w.putJSON("/v1/namespace/"+ns, map[string]string{"Name": ns})
		for _, id := range ids {
			w.stepTo(fmt.Sprintf("nomad volume register of volctl's export of %q (include secrets %v)", id, secrets))
			file := filepath.Join(out, "volume-"+id+".hcl")
			o, err := w.tryNomad("volume", "register", "-namespace", ns, file)
			if id == "both" {
				// Refused by Nomad, as the export said it may be: its plugin confirms the
				// capabilities it is asked, and Nomad compares each with every one confirmed.
				if err == nil || !strings.Contains(o, "'file-system' access type was not requested but was validated by the controller") {
					t.Errorf("nomad volume register %s: %v\n%s\nwant it refused for its two attachment modes (if Nomad now takes it, the export's note is stale)", file, err, o)
				}
				line := 1 + strings.Count(strings.Split(readOr(file), `attachment_mode = "block-device"`)[0], "\n")
				if !strings.Contains(notes, `volume "both": Nomad may refuse its file`) || !strings.Contains(notes, fmt.Sprintf("line %d is the first block-device one", line)) {
					t.Errorf("export nomad of volume both, which Nomad refuses, noted: %s", notes)
				}
				continue
			}
			if err != nil {
				t.Errorf("nomad volume register %s: %v\n%s\nthe file:\n%s", file, err, o, readOr(file))
				continue
			}
			var got api.CSIVolume
			if !w.getJSON("/v1/volume/csi/"+url.PathEscape(id)+"?namespace="+ns, &got) {
				t.Errorf("Nomad has no volume %q in namespace %s after nomad volume register", id, ns)
				continue
			}
			info := strings.Fields(w.volctl(0, "volume", "status", id, "-t", "{{.external_id}} {{.capacity_bytes}}"))
			if got.ExternalID != info[0] || fmt.Sprint(got.RequestedCapacityMin) != info[1] || got.PluginID != "mem" {
				t.Errorf("%q in Nomad: external ID %q, capacity_min %d; volctl has %v", id, got.ExternalID, got.RequestedCapacityMin, info)
			}
			// A registered volume's topology is its spec's: found's names none.
			if wantTopo := id != "found"; wantTopo != (len(got.Topologies) == 1 && got.Topologies[0].Segments["zone"] == "z1") || !wantTopo && len(got.Topologies) > 0 {
				t.Errorf("%q in Nomad: topologies %v; want the plugin's accessible one, zone z1 (none for found)", id, got.Topologies)
			}
			w.nomad("volume", "deregister", "-namespace", ns, id)
		}
	}
	for _, id := range ids {
		if id == "both" {
			continue
		}
		w.stepTo(fmt.Sprintf("volctl nomad register %q, nomad volume deregister, volctl nomad release", id))
		if out := w.volctl(0, "nomad", "register", id); !strings.Contains(out, fmt.Sprintf("Registered volume %q", id)) || strings.Contains(out, "Warning") {
			t.Errorf("volctl nomad register %s: %s", id, out)
		}
		w.nomad("volume", "deregister", id)
		w.volctl(0, "nomad", "release", id)
	}
	w.stepTo("volctl nomad register of volume both warns before Nomad refuses it")
	if out := w.volctl(1, "nomad", "register", "both"); !strings.Contains(out, `Warning: volume "both": Nomad may refuse it`) ||
		!strings.Contains(out, "was not requested but was validated by the controller") {
		t.Errorf("volctl nomad register of volume both: %s\nwant the warning, then Nomad's refusal", out)
	}
	w.stopMemPluginInNomad("mem")
}

// readOr is the file's text, or why it could not be read.
func readOr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
