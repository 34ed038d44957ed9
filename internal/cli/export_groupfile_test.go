package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A user moving to Nomad with a group spec never run here could not export it: --group names
// a recorded group only, and said "group "web" not found". --group-file FILE exports the
// group of a spec file as a job, with the volumes it uses, as --group does a recorded one; an
// invalid file is refused with its diagnostics and nothing written, and --group of a group
// not run names --group-file.
func TestExportNomadGroupFileOfAGroupNeverRun(t *testing.T) {
	h := newCLIHarness(t)
	file := perAllocGroupFile(t, 2, "logs")
	dir := filepath.Dir(file)
	createSingleWriter(t, h.e, "logs[0]", "logs[1]")

	out := filepath.Join(dir, "out")
	code, stdout, stderr := h.runReported("export", "nomad", "--group-file", file, "--out", out)
	if code != 0 {
		t.Fatalf("export nomad --group-file: exit %d\n%s%s", code, stdout, stderr)
	}
	job, err := os.ReadFile(filepath.Join(out, "job-web.nomad.hcl"))
	if err != nil {
		t.Fatalf("export nomad --group-file wrote no job: %v\n%s%s", err, stdout, stderr)
	}
	for _, want := range []string{`job "web"`, `source          = "logs"`, "per_alloc       = true", `destination      = "/srv/web/$${NOMAD_ALLOC_INDEX}"`} {
		if !strings.Contains(string(job), want) {
			t.Errorf("job of the group file:\n%s\nwant it to hold %q", job, want)
		}
	}
	for _, v := range []string{"volume-logs[0].hcl", "volume-logs[1].hcl"} {
		if _, err := os.Stat(filepath.Join(out, v)); err != nil {
			t.Errorf("the group's volume file %s: %v", v, err)
		}
	}

	if code, stdout, stderr := h.runReported("export", "nomad", "--group", "web", "--out", out); code == 0 || !strings.Contains(stderr, "--group-file FILE") {
		t.Errorf("export nomad --group of a group never run: exit %d\n%s%s\nwant it to name --group-file", code, stdout, stderr)
	}
	bad := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("group \"api\" {\n  volume \"d\" {\n    type = \"csi\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(dir, "out2")
	code, stdout, stderr = h.runReported("export", "nomad", "--group-file", bad, "--out", out2)
	if code != 2 || !strings.Contains(stderr, "bad.hcl:") || !strings.Contains(stderr, "nothing was exported") {
		t.Errorf("export nomad --group-file of an invalid spec: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out2); err == nil {
		t.Errorf("export nomad --group-file of an invalid spec made %s", out2)
	}
}

// A group's volume volctl does not know, whose name begins another's ID (logs, logs-old) or
// several (logs-a, logs-b): engine.Volume takes an unambiguous prefix, so the export found
// logs-old for logs and then stopped ("did you mean"), writing nothing, where a volume volctl
// does not know is a note (review25c). It is a note here too, the job written, and neither
// logs-old nor logs-a exported for it.
func TestExportNomadGroupFileOfAVolumeUnknownButAPrefix(t *testing.T) {
	for _, known := range [][]string{{"logs-old"}, {"logs-a", "logs-b"}} {
		t.Run(strings.Join(known, ","), func(t *testing.T) {
			h := newCLIHarness(t)
			dir := t.TempDir()
			file := filepath.Join(dir, "web.hcl")
			if err := os.WriteFile(file, []byte(`group "web" {
  volume "data" {
    type            = "csi"
    source          = "logs"
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume      = "data"
    destination = "/srv/web"
  }
}
`), 0o644); err != nil {
				t.Fatal(err)
			}
			createSingleWriter(t, h.e, known...)
			out := filepath.Join(dir, "out")
			code, stdout, stderr := h.runReported("export", "nomad", "--group-file", file, "--out", out)
			if code != 0 {
				t.Fatalf("export nomad --group-file of a group whose volume logs volctl does not know, beside %v: exit %d\n%s%s", known, code, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, `uses volume "logs", which volctl does not know`) {
				t.Errorf("export nomad --group-file: no note of volume logs\n%s%s", stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "job-web.nomad.hcl")); err != nil {
				t.Errorf("export nomad --group-file wrote no job: %v", err)
			}
			for _, id := range known {
				if _, err := os.Stat(filepath.Join(out, "volume-"+id+".hcl")); err == nil {
					t.Errorf("export nomad --group-file exported volume %s for the group's logs", id)
				}
			}
		})
	}
}

// perAllocGroupFile writes, in a directory of its own, the spec file web.hcl of group "web" of
// count allocs, each claiming its own volume of source (per_alloc, single-node-writer) bound at
// /srv/web/{index}, and returns its path.
func perAllocGroupFile(t *testing.T, count int, source string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "web.hcl")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`group "web" {
  count = %d
  volume "data" {
    type            = "csi"
    source          = %q
    per_alloc       = true
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume      = "data"
    destination = "/srv/web/{index}"
  }
}
`, count, source)), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
