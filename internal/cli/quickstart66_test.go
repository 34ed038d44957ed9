package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// Root without CAP_SYS_ADMIN (a container without --privileged, `unshare -U -r`) runs
// quickstart: its plugin's bind mount is refused, and the plugin says it runs as root already
// ("the plugin runs as root (uid 0) without CAP_SYS_ADMIN"). volume claim's hint was fixed for
// that case (hostpathRootWithoutCapabilityHint: "root in a container or a user namespace was
// told to use sudo"), but quickstart's own error still says "Run it as root: sudo volctl
// quickstart" to a user who is root, where sudo changes nothing (and is often absent).
// Found by helper review66.
func TestQuickstartAsRootWithoutCapabilityIsNotToldToUseSudo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the plugin says it runs as root only when it does")
	}
	parent := hostpathtest.ShortDir(t)
	ios, _, _, _ := iostreams.Test()
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent,
		mounter: &hostpathtest.FakeMounter{Fail: unix.EPERM}})
	if ExitCode(err) != ExitError {
		t.Fatalf("err = %v (exit %d), want exit 1", err, ExitCode(err))
	}
	if !strings.Contains(err.Error(), "runs as root (uid 0) without CAP_SYS_ADMIN") {
		t.Fatalf("the plugin did not say it runs as root: %v", err)
	}
	if strings.Contains(err.Error(), "sudo") || strings.Contains(err.Error(), "Run it as root") {
		t.Errorf("quickstart, already root, is told to run as root through sudo, which gives it no CAP_SYS_ADMIN:\n%v", err)
	}
	assertCleanedUp(t, parent)
}

// quickstart makes every path it uses under $TMPDIR, which the user never typed on its command
// line; the missing-TMPDIR and socket-length failures name $TMPDIR and say to set it. Two
// other $TMPDIRs fail at the second step with the plugin's own words, as `plugin serve
// hostpath` says them, not naming $TMPDIR:
//   - relative (TMPDIR=tmp): `quickstart: socket tmp/volctl-quickstart-N/hostpath.sock
//     "tmp/volctl-quickstart-N/hostpath.sock" must be an absolute path`, of a socket the user
//     never gave (the path twice);
//   - another user's (`sudo -E` keeping pam_tmpdir's /tmp/user/1000): "...reached through
//     /tmp/user/1000, which is owned by uid 1000...; chown or chmod go-w /tmp/user/1000, or
//     serve another --root": --root is no flag of quickstart's.
//
// Each should name $TMPDIR and what to do about it (or, relative, make it absolute and run).
// Found by helper review66.
func TestQuickstartTMPDIRErrorsNameTMPDIR(t *testing.T) {
	check := func(t *testing.T, tmp string) {
		t.Helper()
		ios, _, out, _ := iostreams.Test()
		err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, mounter: &hostpathtest.FakeMounter{}})
		if err == nil {
			return // made usable: ran
		}
		if !strings.Contains(err.Error(), "TMPDIR") || strings.Contains(err.Error(), "--root") {
			t.Errorf("quickstart with TMPDIR=%s failed without naming $TMPDIR and what to do about it (or advising a flag quickstart lacks):\n%v\nstdout:\n%s", tmp, err, out)
		}
	}
	t.Run("relative", func(t *testing.T) {
		parent := hostpathtest.ShortDir(t)
		if err := os.Mkdir(filepath.Join(parent, "tmp"), 0o700); err != nil {
			t.Fatal(err)
		}
		t.Chdir(parent)
		t.Setenv("TMPDIR", "tmp")
		check(t, "tmp")
		assertCleanedUp(t, filepath.Join(parent, "tmp"))
	})
	t.Run("another user's", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("making a directory of another user takes root")
		}
		tmp := filepath.Join(hostpathtest.ShortDir(t), "theirs")
		if err := os.Mkdir(tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(tmp, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TMPDIR", tmp)
		check(t, tmp)
		assertCleanedUp(t, tmp)
	})
}

// quickstart --keep that fails before it made anything (here its socket path is too long for
// $TMPDIR; an interrupt or a refused plugin root at step 2 is the same) still prints the advice
// of a kept run: "Look at it with: volctl --state-dir S volume status demo" (no volume demo
// was made; `status` there makes a fresh empty state dir) and "To use the volume again, start
// the plugin on the same root first: volctl plugin serve hostpath --socket S ..." (the socket
// path it has just refused as too long: that command fails), and leaves an empty directory
// without its mark, which no later quickstart sweeps.
// Found by helper review66.
func TestQuickstartKeepAfterAnEarlyFailureAdvisesNothingThatFails(t *testing.T) {
	parent := filepath.Join(hostpathtest.ShortDir(t), strings.Repeat("d", 90))
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	ios, _, out, _ := iostreams.Test()
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, Keep: true,
		mounter: &hostpathtest.FakeMounter{}})
	if err == nil || !strings.Contains(err.Error(), "longer than a unix socket allows") {
		t.Fatalf("err = %v, want the socket path refused", err)
	}
	_, kept, ok := strings.Cut(out.String(), "\nKept ")
	if !ok {
		return // nothing kept: nothing advised
	}
	var advised []string
	for _, w := range []string{"volume status " + quickstartVolume, "To use the volume again", "plugin serve hostpath --socket"} {
		if strings.Contains(kept, w) {
			advised = append(advised, w)
		}
	}
	if len(advised) > 0 {
		t.Errorf("quickstart --keep, which made no volume and could not serve on its socket, advises %q:\nKept %s", advised, kept)
	}
}
