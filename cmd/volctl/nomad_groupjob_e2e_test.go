package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/spec"
)

// TestNomadJobValidationAgreesWithGroupSpecs checks that volctl's reader of a group's volume
// block takes what Nomad's job validation takes and refuses what it refuses: for every access
// mode, read_only, per_alloc, count 1 and 2, each attachment mode, with and without
// mount_options, volctl parses the group spec, and the real `nomad job validate` validates the
// job `volctl export nomad --group` writes for that group (nomad.GroupJob, given the group as
// written, so that Nomad is asked about the specs volctl refuses too). Before, a read-write
// multi-node-single-writer volume in a group of count 2 was taken by volctl and refused by
// Nomad ("allows only one writer").
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadJobValidationAgreesWithGroupSpecs(t *testing.T) {
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to compare volctl's group rules with Nomad's job validation")
	}
	w := makeNomadWorld(t, 3*time.Minute)
	w.stepTo("start nomad agent -dev on 127.0.0.1")
	w.startAgent()

	type combo struct {
		mode               spec.AccessMode
		attach             spec.AttachmentMode
		readOnly, perAlloc bool
		count              int
		mountOptions       bool
	}
	var combos []combo
	for _, mode := range spec.AccessModes {
		for _, attach := range spec.AttachmentModes {
			for _, ro := range []bool{false, true} {
				for _, per := range []bool{false, true} {
					for _, count := range []int{1, 2} {
						combos = append(combos, combo{mode, attach, ro, per, count, false})
					}
				}
			}
			combos = append(combos, combo{mode, attach, false, false, 1, true})
		}
	}
	w.stepTo(fmt.Sprintf("volctl parses, and nomad job validate validates, %d groups", len(combos)))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, c := range combos {
		mo := ""
		r := spec.VolumeRequest{Name: "v", Type: "csi", Source: "src", PerAlloc: c.perAlloc, ReadOnly: c.readOnly, AccessMode: c.mode, AttachmentMode: c.attach}
		if c.mountOptions {
			mo = "    mount_options {\n      fs_type = \"ext4\"\n    }\n"
			r.MountOptions = &spec.MountOptions{FSType: "ext4"}
		}
		src := fmt.Sprintf(`group "g" {
  count = %d
  volume "v" {
    type            = "csi"
    source          = "src"
    per_alloc       = %v
    read_only       = %v
    access_mode     = %q
    attachment_mode = %q
%s  }
  volume_mount {
    volume      = "v"
    destination = "/srv/g/{index}"
  }
}
`, c.count, c.perAlloc, c.readOnly, c.mode, c.attach, mo)
		_, diags := spec.NewParser().ParseGroup("g.hcl", []byte(src))
		job, _, err := nomad.GroupJob(spec.Group{Name: "g", Count: c.count, Volumes: []spec.VolumeRequest{r},
			Mounts: []spec.VolumeMount{{Volume: "v", Destination: "/srv/g/{index}", PropagationMode: spec.PropagationPrivate}}}, nomad.JobOptions{})
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(w.dir, fmt.Sprintf("job-%d.nomad.hcl", i))
		if err := os.WriteFile(file, job, 0o644); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, verr := w.tryNomad("job", "validate", file)
			if (verr == nil) != !diags.HasErrors() {
				t.Errorf("%+v: volctl's verdict (errors %v) is not Nomad's (error %v)\nvolctl: %s\nnomad job validate: %s", c, diags.HasErrors(), verr, diags, strings.TrimSpace(out))
			}
		}()
	}
	wg.Wait()
	w.stopAgent()
	w.checkClean()
}

// TestNomadValidatesJobsOfNamesVolctlTakes checks, with the real `nomad job validate`, the
// jobs `volctl export nomad` writes for names volctl takes and Nomad's job validation refused
// as written: a group named with a space (its job ID), a volume block named with a backslash
// and one named "alloc" (their tasks' names), a hostpath plugin ID with a space (its system
// job's ID). Before, Nomad refused each ("Job ID contains a space", "Task name cannot include
// slashes", "Task cannot be named \"alloc\"").
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadValidatesJobsOfNamesVolctlTakes(t *testing.T) {
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to validate volctl's jobs of odd names with Nomad's job validation")
	}
	w := makeNomadWorld(t, 2*time.Minute)
	w.stepTo("start nomad agent -dev on 127.0.0.1")
	w.startAgent()

	w.stepTo("nomad job validate the group's and the plugin's jobs")
	req := func(name string) spec.VolumeRequest {
		return spec.VolumeRequest{Name: name, Type: "csi", Source: "src", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	}
	group, _, err := nomad.GroupJob(spec.Group{Name: "my web", Count: 1,
		Volumes: []spec.VolumeRequest{req(`data\1`), req("alloc")},
		Mounts: []spec.VolumeMount{{Volume: `data\1`, Destination: "/srv/a", PropagationMode: spec.PropagationPrivate},
			{Volume: "alloc", Destination: "/srv/b", PropagationMode: spec.PropagationPrivate}}}, nomad.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plugin, err := nomad.PluginJob(nomad.PluginJobOptions{PluginID: "host path", VolctlPath: "/usr/local/bin/volctl", Root: "/srv/volumes",
		NodeID: "node1", NomadDataDir: "/opt/nomad/data"})
	if err != nil {
		t.Fatal(err)
	}
	for name, job := range map[string][]byte{"group": group, "plugin": plugin} {
		file := filepath.Join(w.dir, name+".nomad.hcl")
		if err := os.WriteFile(file, job, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := w.tryNomad("job", "validate", file); err != nil {
			t.Errorf("nomad job validate of the %s job: %v\n%s\n%s", name, err, strings.TrimSpace(out), job)
		}
	}
	w.stopAgent()
	w.checkClean()
}
