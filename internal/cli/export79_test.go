package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestExportNomadGroupWithoutVolumeMountsHasATask: a group spec may hold volume blocks and no
// volume_mount (volctl's parser takes it: its allocs claim the volumes, mounting them nowhere),
// and `export nomad --group-file` writes its job with one task per volume_mount, so here a
// job whose group has no task at all, exit 0, "Wrote group". Nomad refuses every such job
// ("Missing tasks for task group", TaskGroup.Validate), so the file handed over is one
// `nomad job run` never takes. Correct: the group's job has a task (running the task command,
// mounting nothing: Nomad claims a group's CSI volumes per alloc, as volctl does), or the
// export refuses the group, naming it and why, with nothing written.
// Found by helper review79 (export).
func TestExportNomadGroupWithoutVolumeMountsHasATask(t *testing.T) {
	h := newCLIHarness(t)
	createSingleWriter(t, h.e, "logs")
	dir := t.TempDir()
	file := filepath.Join(dir, "web.hcl")
	if err := os.WriteFile(file, []byte(`group "web" {
  volume "data" {
    type            = "csi"
    source          = "logs"
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := h.runReported("validate", file); code != 0 {
		t.Fatalf("precondition: volctl validate of a group with no volume_mount: exit %d\n%s%s", code, stdout, stderr)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := h.runReported("export", "nomad", "--group-file", file, "--out", out, "--no-plugin-job")
	if code != 0 {
		t.Fatalf("export nomad of a group with no volume_mount: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, `group "web" has no volume_mount: written with one task, "main", that mounts nothing`) {
		t.Errorf("export nomad of a group with no volume_mount does not say its task mounts nothing:\n%s", stderr)
	}
	src, err := os.ReadFile(filepath.Join(out, "job-web.nomad.hcl"))
	if err != nil {
		t.Fatalf("export nomad exit 0 but wrote no job: %v\n%s%s", err, stdout, stderr)
	}
	f, diags := hclsyntax.ParseConfig(src, "job-web.nomad.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("the exported job does not parse: %v\n%s", diags, src)
	}
	tasks := 0
	for _, jb := range f.Body.(*hclsyntax.Body).Blocks {
		for _, gb := range jb.Body.Blocks {
			if gb.Type != "group" {
				continue
			}
			for _, tb := range gb.Body.Blocks {
				if tb.Type == "task" {
					tasks++
				}
			}
		}
	}
	if tasks == 0 {
		t.Errorf("export nomad exit 0, %q, but the job's group has no task, which Nomad refuses (\"Missing tasks for task group\"):\n%s", stdout, src)
	}
}

// TestExportNomadContainerDriverWithoutAnImageIsRefused: `export nomad --driver docker` (or
// podman) without --image writes each task as `driver = "docker"` with config `command =
// "/bin/sleep"`, `args = ["infinity"]` and no image, exit 0, "Wrote group". Nomad's docker and
// podman drivers require config.image (their task config spec's "image" attribute is
// required), so no alloc of the job ever starts its task ("Missing required argument"), and
// nothing said so when the file was written. Correct: a usage error naming --driver and
// --image (as --driver raw_exec is refused), nothing written.
// Found by helper review79 (export).
func TestExportNomadContainerDriverWithoutAnImageIsRefused(t *testing.T) {
	for _, driver := range []string{"docker", "podman"} {
		t.Run(driver, func(t *testing.T) {
			h := newCLIHarness(t)
			file := perAllocGroupFile(t, 1, "logs")
			createSingleWriter(t, h.e, "logs[0]")
			out := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := h.runReported("export", "nomad", "--group-file", file, "--out", out, "--no-plugin-job", "--driver", driver)
			if code == 0 {
				job, _ := os.ReadFile(filepath.Join(out, "job-web.nomad.hcl"))
				t.Fatalf("export nomad --driver %s without --image: exit 0, %q; the job's task has no image, which the %s driver requires:\n%s", driver, stdout, driver, job)
			}
			if code != ExitUsage || !strings.Contains(stderr, "--image") {
				t.Errorf("export nomad --driver %s without --image: exit %d, want %d naming --image:\n%s", driver, code, ExitUsage, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "job-web.nomad.hcl")); !os.IsNotExist(err) {
				t.Errorf("export nomad --driver %s without --image wrote its job: %v", driver, err)
			}
			// As the refusal says: with --image, written, the image in the task's config.
			code, stdout, stderr = h.runReported("export", "nomad", "--group-file", file, "--out", out, "--no-plugin-job", "--driver", driver, "--image", "busybox:1.36")
			job, _ := os.ReadFile(filepath.Join(out, "job-web.nomad.hcl"))
			if code != 0 || !strings.Contains(string(job), `image = "busybox:1.36"`) {
				t.Errorf("export nomad --driver %s --image busybox:1.36: exit %d\n%s%s\n%s", driver, code, stdout, stderr, job)
			}
		})
	}
	// --image for exec, which runs no image: refused too (Nomad refuses an exec task's image).
	h := newCLIHarness(t)
	file := perAllocGroupFile(t, 1, "logs")
	createSingleWriter(t, h.e, "logs[0]")
	code, _, stderr := h.runReported("export", "nomad", "--group-file", file, "--out", filepath.Join(t.TempDir(), "out"), "--no-plugin-job", "--image", "busybox:1.36")
	if code != ExitUsage || !strings.Contains(stderr, "--image is for docker or podman") {
		t.Errorf("export nomad --image with the exec driver: exit %d, want %d naming --image:\n%s", code, ExitUsage, stderr)
	}
}
