package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNomadRefusedControllerUnpublishConverges: volctl's own plugin refuses
// ControllerUnpublishVolume while the volume is still staged on the node. Does a real Nomad
// come back to an unpublish it was refused, or does the volume stay claimed for good?
//
// A volume volctl claims (staged and published by a local plugin without --enable-attach) is
// handed over forced, and Nomad runs the plugin with --enable-attach on the same root. A Nomad
// job claims the volume: ControllerPublishVolume, then NodeStageVolume refused (staged at the
// local staging path), the alloc fails, and Nomad's ControllerUnpublishVolume is refused while
// the local claim stages it. Nomad keeps the stopped alloc's claim, so `nomad volume
// deregister` is refused, and `volctl nomad release` names the alloc as stopped and the local
// claims to release (it said to stop the alloc's job). Nomad tries the unpublish again by itself
// (its volume watcher, about once a second): once the local claim is released it succeeds and
// the claim goes: deregister, release, and the volume is volctl's again.
//
// Opt-in, as TestNomadEndToEnd: NOMAD_BIN, root.
func TestNomadRefusedControllerUnpublishConverges(t *testing.T) {
	w := newNomadWorld(t, 10*time.Minute)
	dir := w.dir
	step := w.stepTo
	volctlBin, err := exec.LookPath("volctl")
	if err != nil {
		t.Fatal(err)
	}

	step("volctl claims volume db on its own plugin (no --enable-attach)")
	root := filepath.Join(dir, "hproot")
	stopHP := startBackground(t, exec.Command("volctl", "plugin", "serve", "hostpath", "--socket", filepath.Join(dir, "hp.sock"), "--root", root, "--node-id", "n1"))
	waitForPath(t, filepath.Join(dir, "hp.sock"))
	w.writeFile("db.hcl", dbSpec)
	w.volctl(0, "plugin", "register", "--id", "hp", "--socket", filepath.Join(dir, "hp.sock"))
	w.volctl(0, "volume", "create", filepath.Join(dir, "db.hcl"))
	w.volctl(0, "volume", "claim", "db", "--alloc", "local-0")

	step("start nomad agent -dev; run the plugin with --enable-attach on the same root")
	w.startAgent()
	w.nomadAddr = w.agentAddr
	w.volctl(0, "export", "nomad", "--all", "--out", filepath.Join(dir, "export"),
		"--volctl-path", volctlBin, "--plugin-root", root, "--nomad-data-dir", w.dataDir)
	job := w.readFile(filepath.Join("export", "plugin-hp.nomad.hcl"))
	attach := strings.Replace(job, `"--node-id", "n1"`, `"--node-id", "n1", "--enable-attach"`, 1)
	if attach == job {
		t.Fatalf("the exported plugin job names no --node-id n1:\n%s", job)
	}
	w.writeFile("plugin-attach.nomad.hcl", attach)
	w.nomad("job", "run", "-detach", filepath.Join(dir, "plugin-attach.nomad.hcl"))
	w.poll("the plugin job to be healthy", 90*time.Second, func() bool {
		var p struct{ NodesHealthy, ControllersHealthy int }
		return w.getJSON("/v1/plugin/csi/hp", &p) && p.NodesHealthy == 1 && p.ControllersHealthy == 1
	})

	step("hand db over despite the local claim (--force)")
	if out := w.volctl(0, "nomad", "register", "db", "--force"); !strings.Contains(out, `Registered volume "db"`) {
		t.Fatalf("forced register: %s", out)
	}

	step("a Nomad job claims db: its staging is refused, the alloc fails, its ControllerUnpublishVolume is refused")
	// exec, whose driver takes mounts (Nomad publishes no CSI volume for a group of raw_exec
	// tasks); the staging is refused before its chroot is built.
	w.writeFile("user.nomad.hcl", `job "user" {
  datacenters = ["*"]
  type        = "batch"
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    volume "data" {
      type            = "csi"
      source          = "db"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
`)
	w.nomad("job", "run", "-detach", filepath.Join(dir, "user.nomad.hcl"))
	w.poll("the user job's alloc to fail", 3*time.Minute, func() bool {
		var allocs []struct{ ClientStatus string }
		return w.getJSON("/v1/job/user/allocations", &allocs) && len(allocs) == 1 && allocs[0].ClientStatus == "failed"
	})
	w.poll("Nomad's ControllerUnpublishVolume to be refused (the agent's log)", time.Minute, func() bool {
		log := w.agentOut.String() // the plugin names the volume by its external ID
		return strings.Contains(log, "ControllerUnpublishVolume: volume") && strings.Contains(log, "is in use: staged at")
	})
	var vol struct{ WriteAllocs map[string]any }
	if !w.getJSON("/v1/volume/csi/db", &vol) || len(vol.WriteAllocs) != 1 {
		t.Fatalf("Nomad's volume after the refused unpublish: %+v, want the failed alloc's claim kept", vol)
	}
	if out, err := w.tryNomad("volume", "deregister", "db"); err == nil {
		t.Fatalf("nomad volume deregister while Nomad holds the stopped alloc's claim: OK, want refused\n%s", out)
	}

	step("volctl nomad release names the stopped alloc and the local claim to release")
	out := w.volctl(4, "nomad", "release", "db")
	if !strings.Contains(out, "of job user has stopped (failed)") || strings.Contains(out, "job stop") ||
		!strings.Contains(out, "release the local claims `volctl volume status db` lists") {
		t.Fatalf("release while Nomad holds the stopped alloc's claim:\n%s", out)
	}

	step("release the local claim: Nomad's unpublish, tried again by itself, succeeds and frees the claim")
	w.volctl(0, "volume", "release", "db", "--alloc", "local-0")
	w.poll("Nomad to free the stopped alloc's claim by itself", time.Minute, func() bool {
		var vol struct{ WriteAllocs, ReadAllocs map[string]any }
		return w.getJSON("/v1/volume/csi/db", &vol) && len(vol.WriteAllocs)+len(vol.ReadAllocs) == 0
	})
	w.nomad("volume", "deregister", "db")
	if out := w.volctl(0, "nomad", "release", "db"); !strings.Contains(out, `Took volume "db" back`) {
		t.Fatalf("release: %s", out)
	}

	step("stop Nomad's plugin; volctl claims db again")
	w.stopPluginJob()
	w.volctl(0, "volume", "claim", "db", "--alloc", "local-1")
	w.volctl(0, "volume", "release", "db", "--alloc", "local-1")
	w.finish(stopHP)
}
