package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestAFileThatIsNoSpecIsAUsageError: a spec file read whole and found to be no spec at all
// (a NUL byte, UTF-16 from a Windows editor, more than 1 MiB) or a path that cannot be one (a
// directory) ended every command with exit 1, "runtime error", which a CI script reads as the
// host failing and retries, while an invalid byte in the same file (invalid UTF-8) was exit 2,
// and so was too much in several files together (maxSpecFilesSize). Each is exit 2, usage
// or invalid spec, as the README's table says, from every command that reads spec files; a
// file that is not there, or not readable, stays a runtime error (exit 1).
func TestAFileThatIsNoSpecIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sub := filepath.Join(dir, "specs.hcl")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	files := []struct {
		what, path string
		code       int
		says       string
	}{
		{"a NUL byte", write("nul.hcl", []byte("id = \"db\"\nname = \"a\x00\"\n")), ExitUsage, "NUL byte at line 2"},
		{"UTF-16", write("utf16.hcl", []byte{0xff, 0xfe, 'i', 0, 'd', 0, ' ', 0}), ExitUsage, "UTF-16"},
		{"more than 1 MiB", write("big.hcl", []byte("#"+strings.Repeat("x", maxSpecSize)+"\n")), ExitUsage, "not a spec file"},
		{"a directory", sub, ExitUsage, "is a directory"},
		{"invalid UTF-8, as before", write("latin1.hcl", []byte("id = \"caf\xe9\"\n")), ExitUsage, "Invalid character encoding"},
		{"missing, as before", filepath.Join(dir, "missing.hcl"), ExitError, "no such file"},
	}
	state := filepath.Join(t.TempDir(), "state")
	for _, command := range [][]string{{"validate"}, {"volume", "register"}, {"volume", "create"}, {"plugin", "register"}, {"group", "run"}} {
		for _, f := range files {
			ios, _, _, errOut := iostreams.Test()
			fac := NewFactory(ios)
			root := NewRootCmd(fac)
			root.SetArgs(append([]string{"--state-dir", state}, append(command, f.path)...))
			code := fac.Report(root.Execute())
			fac.Close()
			if code != f.code || !strings.Contains(errOut.String(), f.says) {
				t.Errorf("volctl %s on a file with %s: exit %d, want %d saying %q: %s", strings.Join(command, " "), f.what, code, f.code, f.says, errOut)
			}
		}
	}
}
