package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestGroupStatusDoesNotGiveAMissingVolumeAnotherVolumesBindProblem: group api's alloc api[0]
// holds its claim of volume data (volume_mount DIR/app) and lacks its claim of logs (volume_mount
// DIR/logs), as a run killed between the alloc's two claims leaves it; DIR/app has since been
// unmounted by hand. The engine's group status puts what it finds at DIR/app into the alloc's
// error (markUnbound), and `volctl group status api` (writeGroupDetail) prints that error as
// the reason logs is missing: "api[0]  logs  missing: volume_mount DIR/app has nothing mounted
// ...: `volctl reconcile` binds the volume there again". The row names another volume's
// destination as why logs is missing, and its advice, followed, binds DIR/app and never claims
// logs; the "`volctl group run FILE` of its spec again" that does claim it is not said. Correct:
// the missing volume's row says what gives the alloc that volume (the group run again, or the
// last run's refusal of it), and DIR/app's problem is said as the alloc's own, not as logs'.
// Real mounts, as root. Found by helper review81 (groups).
func TestGroupStatusDoesNotGiveAMissingVolumeAnotherVolumesBindProblem(t *testing.T) {
	requireMount(t)
	h := newCLIHarness(t)
	h.createVolume(t, "data", spec.MultiNodeMultiWriter)
	h.createVolume(t, "logs", spec.MultiNodeMultiWriter)
	dir := hostpathtest.MountDir(t)
	app, logs := filepath.Join(dir, "app"), filepath.Join(dir, "logs")
	src := `group "api" {
  volume "d" {
    type            = "csi"
    source          = "data"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }
  volume "l" {
    type            = "csi"
    source          = "logs"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume      = "d"
    destination = "` + app + `"
  }
  volume_mount {
    volume      = "l"
    destination = "` + logs + `"
  }
}
`
	g, diags := spec.NewParser().ParseGroup("api.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if _, err := h.e.RunGroup(h.ctx, *g); err != nil {
		t.Fatalf("group run: %v", err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(context.Background(), "api") })
	// What a run killed after the alloc's first claim leaves: that claim alone
	// (as TestGroupStatusSaysWhatAnAllocCutShortLacks makes it).
	if _, err := h.e.Release(h.ctx, "logs", "api[0]"); err != nil {
		t.Fatal(err)
	}
	// Later, data's volume_mount is unmounted (by hand, a namespace teardown).
	if err := unix.Unmount(app, 0); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := h.runReported("group", "status", "api")
	if code != ExitOK {
		t.Fatalf("group status api: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "has nothing mounted") {
		t.Fatalf("group status api does not say %s has nothing mounted (the precondition):\n%s", app, out)
	}
	row := regexp.MustCompile(`(?m)^api\[0\] +logs +.*$`).FindString(out)
	if row == "" {
		t.Fatalf("group status api: no row for the missing volume logs:\n%s", out)
	}
	if strings.Contains(row, app) || !strings.Contains(row, "group run") {
		t.Errorf("group status api: the row of volume logs, which alloc api[0] lacks, reads\n  %s\n"+
			"giving as the reason logs is missing volume data's volume_mount %s and a `volctl reconcile` that binds it and claims nothing; "+
			"want the row to say what gives the alloc logs (`volctl group run FILE` of its spec again), %s's problem said as the alloc's own:\n%s",
			row, app, app, out)
	}
}
