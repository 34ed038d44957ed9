package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// checkQuickstartTemp probes $TMPDIR with pathtrust.Ancestors($TMPDIR/volctl-quickstart): a
// fixed name inside the shared, sticky /tmp that any local user may create first. A symlink
// there owned by another user is "on the way" to the probe, so quickstart (run as root, as it
// must be to mount) refuses the normal /tmp at once, blaming $TMPDIR and advising another one,
// though quickstart never uses that name (os.MkdirTemp makes volctl-quickstart-NNN) and /tmp
// being sticky is exactly what pathtrust trusts. Any user can so deny every quickstart on the
// host with one `ln -s x /tmp/volctl-quickstart`.
// Found by helper review66.
func TestQuickstartTempNotRefusedForAnotherUsersNameInStickyTmp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a symlink of another user takes root")
	}
	tmp := filepath.Join(hostpathtest.ShortDir(t), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, os.ModeSticky|0o777); err != nil { // as /tmp is
		t.Fatal(err)
	}
	// Before it, the sticky directory as it is is accepted.
	if err := checkQuickstartTemp(tmp); err != nil {
		t.Fatalf("a sticky 1777 directory like /tmp refused: %v", err)
	}
	// Another user (nobody) plants the probe's name.
	link := filepath.Join(tmp, "volctl-quickstart")
	if err := os.Symlink("/nonexistent", link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := checkQuickstartTemp(tmp); err != nil {
		t.Errorf("checkQuickstartTemp(%s), a sticky 1777 directory like /tmp, refused because another user made a symlink named volctl-quickstart in it:\n%v", tmp, err)
	}
	t.Setenv("TMPDIR", tmp)
	ios, _, out, _ := iostreams.Test()
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, mounter: &hostpathtest.FakeMounter{}})
	if err != nil && strings.Contains(err.Error(), "TMPDIR") {
		t.Errorf("quickstart with TMPDIR=%s (sticky, like /tmp) refused over another user's symlink named volctl-quickstart:\n%v\nstdout:\n%s", tmp, err, out)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	assertCleanedUp(t, tmp)
}
