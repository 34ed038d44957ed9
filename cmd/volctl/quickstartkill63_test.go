package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// mountsBelow are the mount points below dir.
func mountsBelow(t *testing.T, dir string) []string {
	t.Helper()
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range mounts {
		if m.Mountpoint != dir {
			out = append(out, m.Mountpoint)
		}
	}
	return out
}

// `volctl quickstart` killed with SIGKILL once its claim is published (a failpoint plays the
// OOM killer) leaves its directory under $TMPDIR, the volume bind-mounted at the claim's
// target: its cleanup never ran. Before, it stayed so for good. The next quickstart removes it,
// unmounting first, and says so (sweepQuickstarts), and leaves nothing of its own.
func TestQuickstartAfterAKilledOneRemovesWhatItLeft(t *testing.T) {
	hostpathtest.RequireMount(t)
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	tmp := hostpathtest.MountDir(t)
	run := func(failpoint string) (string, error) {
		cmd := exec.Command(bin, "quickstart")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "VOLCTL_FAILPOINT="+failpoint)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("claim:published")
	if !killed(err) {
		t.Fatalf("quickstart with claim:published armed = %v, want it killed\n%s", err, out)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "volctl-quickstart-*"))
	if len(left) != 1 || len(mountsBelow(t, left[0])) == 0 {
		t.Fatalf("the killed quickstart left %v, with mounts %v; want its directory, the claim mounted in it", left, mountsBelow(t, tmp))
	}
	out, err = run("")
	if err != nil {
		t.Fatalf("the next quickstart: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Removed "+left[0]+", left by a quickstart killed before it cleaned up") {
		t.Errorf("the next quickstart did not say it removed %s:\n%s", left[0], out)
	}
	if rest, _ := filepath.Glob(filepath.Join(tmp, "volctl-quickstart-*")); len(rest) != 0 || len(mountsBelow(t, tmp)) != 0 {
		t.Errorf("after the next quickstart, %v are left, and mounted below %s: %v", rest, tmp, mountsBelow(t, tmp))
	}
}
