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
	quickstartRefusesTempNamed(t, "t\x1b]0;x\x07", "control character")
}

// quickstartRefusesTempNamed runs quickstart with $TMPDIR a directory named name, and fails
// unless it is refused before its first step, naming $TMPDIR and saying want, nothing made.
func quickstartRefusesTempNamed(t *testing.T, name, want string) {
	t.Helper()
	short, err := os.MkdirTemp("", "qs") // a socket's path under t.TempDir() is too long
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	parent := filepath.Join(short, name)
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := iostreams.Test()
	err = quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, mounter: &hostpathtest.FakeMounter{}})
	if err == nil {
		t.Fatalf("quickstart under a directory named %q succeeded\nstdout:\n%s", name, out)
	}
	if !strings.Contains(err.Error(), "$TMPDIR") || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v\nwant $TMPDIR named, and %q\nstderr:\n%s", err, want, errOut)
	}
	if strings.Contains(out.String(), "==> 1.") {
		t.Errorf("quickstart began its steps before refusing its directory:\n%s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "volctl-quickstart-*")); len(left) > 0 {
		t.Errorf("quickstart refused its directory but made %v in it", left)
	}
}
