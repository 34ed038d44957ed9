package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNomadVolumeInUseInNomad hands over a volume, edits Nomad's copy (fs_type xfs) and has a
// Nomad job's alloc claim it: `volctl nomad release` refuses to take it back from under the
// alloc (exit 4), naming the alloc, its job and the `nomad job stop` to run first. Nomad
// refuses to change the mount options of a volume in use, and so the registration of volctl's
// copy: `volctl nomad register --dry-run` said "Would update" and exited 0, and now says it
// would be refused (exit 4), as it is. Once the job is stopped and the volume deregistered, the release
// takes it back.
//
// Opt-in: NOMAD_BIN names a Nomad binary built with cgo (the exec driver, which Nomad's CSI
// claims need), run as root.
func TestNomadVolumeInUseInNomad(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a Nomad alloc claims a CSI volume only for a task driver that supports CSI (exec), which needs root")
	}
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to run the end-to-end test against a real agent")
	}
	// The alloc's task only sleeps: its chroot holds sleep and what it links alone. With the
	// exec driver's default one (most of the host's /bin, /etc, /lib and /usr, built before
	// the task starts, which its stop waits for, and removed with the test's directory) the
	// test took 30-110 s, most of it copying and removing that chroot.
	w := makeNomadWorld(t, 3*time.Minute)
	w.chroot = chrootOf(t, "/bin/sleep")
	w.startMemPlugin("mem", nil)
	w.stepTo("volctl creates volume db and hands it over")
	w.writeFile("db.hcl", strings.Replace(dbSpec, `plugin_id = "hp"`, `plugin_id = "mem"`, 1))
	w.volctl(0, "volume", "create", filepath.Join(w.dir, "db.hcl"))
	ext := strings.TrimSpace(w.volctl(0, "volume", "status", "db", "-t", "{{.external_id}}"))
	w.volctl(0, "nomad", "register", "db")

	w.stepTo("nomad volume register edits Nomad's copy: fs_type xfs")
	w.editInNomad("edited.hcl", ext, `capacity_min = "10MiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
mount_options {
  fs_type = "xfs"
}`)
	w.stepTo("a Nomad job's alloc claims it")
	w.writeFile("user.nomad.hcl", `job "user" {
  datacenters = ["*"]
  group "g" {
    volume "d" {
      type            = "csi"
      source          = "db"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
    }
  }
}
`)
	w.nomad("job", "run", "-detach", filepath.Join(w.dir, "user.nomad.hcl"))
	w.poll("the job's alloc to claim volume db", execTaskStart, func() bool {
		var v struct{ WriteAllocs map[string]any }
		return w.getJSON("/v1/volume/csi/db", &v) && len(v.WriteAllocs) > 0
	})

	w.stepTo("volctl nomad release is refused, naming the alloc and its job")
	out := w.volctl(4, "nomad", "release", "db")
	for _, want := range []string{"still registered in Nomad", "Nomad's allocs claim it: user.g[0]", "of job user", "`env -u NOMAD_REGION nomad job stop -namespace default user`", "`env -u NOMAD_REGION nomad volume deregister -namespace default db`"} {
		if !strings.Contains(out, want) {
			t.Errorf("release of a volume a Nomad alloc claims: %s\nwant it to say %q", out, want)
		}
	}
	refused := func(field string) {
		t.Helper()
		w.stepTo("volctl nomad register --dry-run says Nomad refuses to change the " + field + " of a volume in use, and it does")
		plan := w.volctl(4, "nomad", "register", "db", "--dry-run")
		if !strings.Contains(plan, "Nomad's allocs claim it (1 claim(s)), and Nomad does not change the "+field+" of a volume in use") {
			t.Errorf("dry run of an update Nomad refuses for the volume in use: %s", plan)
		}
		if out := w.volctl(4, "nomad", "register", "db"); !strings.Contains(out, "can not update mount options while volume is in use") {
			t.Errorf("update of the %s of a volume in use: %s", field, out)
		}
	}
	refused("mount_options")
	w.stepTo("the job stopped and the volume deregistered, the release takes it back")
	w.nomad("job", "stop", "-detach", "-purge", "user")
	w.poll("Nomad to free the job's claim of volume db", 2*time.Minute, func() bool {
		_, err := w.tryNomad("volume", "deregister", "db")
		return err == nil
	})
	w.volctl(0, "nomad", "release", "db")
	w.stopMemPluginInNomad("mem")
}
