package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// `volctl --state-dir DIR quickstart` is accepted, and quickstart works in a temporary state
// dir of its own, never DIR ("never in your state dir", its help). But the root's
// PersistentPreRunE (Factory.adviseStateDir) wraps stderr in stateDirAdvice for the --state-dir
// given, and quickstart writes its errors through that same stderr, so every backticked volctl
// command in them is rewritten to name DIR. With the release step failing (a target held busy),
// the error that ends "what this says to run on that state no longer applies", about
// quickstart's own removed state, reads "the claim is left unpublishing for `volctl --state-dir
// DIR reconcile`; `volctl --state-dir DIR volume detach demo --force --yes` drops it". Pasted,
// that force-detaches the user's own volume "demo" in DIR, which is exactly what cleanedUp was
// written to prevent. Correct behaviour: quickstart's errors never advise commands on the
// --state-dir given. Either quickstart refuses --state-dir (a usage error saying it uses a
// temporary state dir of its own), or its stderr is not rewritten with it.
// Found by helper review77 (quickstart).
func TestQuickstartErrorsDoNotAdviseTheUsersStateDir(t *testing.T) {
	if err := hostpathtest.CanMount(); err != nil {
		t.Fatalf("precondition: needs root with CAP_SYS_ADMIN to bind-mount: %v", err)
	}
	parent := hostpathtest.MountDir(t)
	mine := filepath.Join(t.TempDir(), "mystate")
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios)
	m := &busyUnmounts{}
	qs := newCmdQuickstart(f, func(o *QuickstartOptions) error {
		o.TempDir, o.mounter = parent, m
		o.afterStep = func(step int) {
			if step == 7 { // the claim published, its status shown: the release comes next
				m.armed.Store(true)
			}
		}
		return quickstartRun(context.Background(), o)
	})
	root := newRoot(f, []*cobra.Command{qs})
	root.SetArgs([]string{"--state-dir", mine, "quickstart"})
	code := f.Report(root.Execute())
	_ = f.Close()
	if code == ExitOK {
		t.Fatalf("quickstart whose unmounts fail succeeded\nstdout:\n%s", out)
	}
	if !strings.Contains(errOut.String(), "volctl") {
		t.Fatalf("precondition: quickstart's error advises no volctl command:\n%s", errOut)
	}
	if strings.Contains(errOut.String(), "`volctl --state-dir") {
		t.Errorf("quickstart, which never uses the --state-dir given (%s), advises commands on it:\n%s", mine, errOut)
	}
	if !strings.Contains(errOut.String(), "is not used") {
		t.Errorf("quickstart did not say that the --state-dir given (%s) is not used:\n%s", mine, errOut)
	}
}
