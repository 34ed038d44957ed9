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

// checkQuickstartTemp judges $TMPDIR itself by its owner and its mode's writers, not by its
// ACL, which the plugin's root check (pathtrust.Ancestors of TMPDIR/volctl-quickstart-X/hostpath,
// TMPDIR being on the way) does read. A TMPDIR root owns, mode 0775 group root, that uid 65534
// may write through `setfacl -m u:65534:rwx` passes quickstart's own check, and quickstart
// then fails later in words that do not name $TMPDIR and advise `--root`, a flag quickstart
// has not: what checkQuickstartTemp was written to prevent (TestQuickstartTMPDIRErrorsNameTMPDIR).
// Found by helper review66.
func TestQuickstartRefusesAnACLWritableTMPDIRNamingIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("an ACL naming another user on a directory root owns takes root")
	}
	tmp := filepath.Join(hostpathtest.ShortDir(t), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	hostpathtest.GrantWrite(t, tmp, 65534) // mode now 0775: the mask in the group bits
	t.Setenv("TMPDIR", tmp)
	ios, _, out, _ := iostreams.Test()
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, mounter: &hostpathtest.FakeMounter{}})
	if err == nil {
		t.Fatalf("quickstart with TMPDIR=%s, writable by uid 65534 through its ACL and not sticky, ran\nstdout:\n%s", tmp, out)
	}
	if !strings.Contains(err.Error(), "TMPDIR") || strings.Contains(err.Error(), "--root") {
		t.Errorf("quickstart with TMPDIR=%s (writable by uid 65534 through its ACL) failed without naming $TMPDIR (or advising --root, which quickstart has not):\n%v", tmp, err)
	}
	assertCleanedUp(t, tmp)
}
