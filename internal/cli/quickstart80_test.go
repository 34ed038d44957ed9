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

// A $TMPDIR (here the test's TempDir) whose name holds a control character took quickstart
// through its first two steps, a directory made and a plugin started, before `plugin register`
// refused the socket's path under it for that character: a first run that failed at step 3
// with an error about a --socket the user never wrote. quickstart now refuses such a directory
// before it makes anything, naming $TMPDIR and what to do, as it refuses a relative one.
func TestQuickstartRefusesATMPDIRHoldingAControlCharacterBeforeItStarts(t *testing.T) {
	short, err := os.MkdirTemp("", "qs") // a socket's path under t.TempDir() is too long
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	parent := filepath.Join(short, "t\x1b]0;x\x07")
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	ios, _, out, _ := iostreams.Test()
	err = quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, mounter: &hostpathtest.FakeMounter{}})
	if err == nil {
		t.Fatalf("quickstart under a directory whose name holds ESC succeeded\nstdout:\n%s", out)
	}
	if !strings.Contains(err.Error(), "$TMPDIR") || !strings.Contains(err.Error(), "control character") {
		t.Errorf("err = %v, want $TMPDIR named, and the control character it holds", err)
	}
	if strings.Contains(out.String(), "==> 1.") {
		t.Errorf("quickstart began its steps before refusing its directory:\n%s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "volctl-quickstart-*")); len(left) > 0 {
		t.Errorf("quickstart refused its directory but made %v in it", left)
	}
}
