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
