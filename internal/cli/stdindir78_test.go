package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestStdinThatIsADirectoryIsAUsageError: `volctl validate specs/` is refused "is a directory",
// exit 2, a usage error as every file that is no spec is (TestAFileThatIsNoSpecIsAUsageError);
// `volctl validate - < specs/` was exit 1, a runtime error a CI script retries, for the same
// mistake. Correct: exit 2, saying it is a directory. Found by helper review78 (validate).
func TestStdinThatIsADirectoryIsAUsageError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "specs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ios, _, _, errOut := iostreams.Test()
	ios.In = in
	fac := NewFactory(ios)
	defer fac.Close()
	root := NewRootCmd(fac)
	root.SetArgs([]string{"--state-dir", filepath.Join(t.TempDir(), "state"), "validate", "-"})
	if code := fac.Report(root.Execute()); code != ExitUsage || !strings.Contains(errOut.String(), "is a directory") {
		t.Errorf("volctl validate - with a directory as standard input: exit %d, want %d saying it is a directory: %s", code, ExitUsage, errOut)
	}
}
