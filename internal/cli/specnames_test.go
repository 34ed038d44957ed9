package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestSpecFileNamesAreEscaped: a spec file's name comes from wherever the files did (a cloned
// repository: `volctl validate specs/*`), and a name may hold an escape sequence. validate's
// summary line, its diagnostics ("on FILE:1:2", and the duplicate-ID error naming both files)
// and its error for a file it cannot read show the name escaped, as they show the file's
// source lines, not as an order to the terminal.
func TestSpecFileNamesAreEscaped(t *testing.T) {
	const evil = "\x1b]52;c;cHduZWQ=\a\x1b[2J"
	const shown = `\x1b]52;c;cHduZWQ=\a\x1b[2J`
	dir := writeSpecs(t, map[string]string{
		"ok" + evil + ".hcl":   validVolume,
		"bad" + evil + ".hcl":  invalidVolume,
		"dup" + evil + ".hcl":  validVolume, // declares "db" again
		"gone" + evil + ".hcl": "",
	})
	gone := filepath.Join(dir, "gone"+evil+".hcl")
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), gone); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, n := range []string{"ok", "bad", "dup", "gone"} {
		files = append(files, filepath.Join(dir, n+evil+".hcl"))
	}
	ios, _, out, errOut := iostreams.Test()
	err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: files, ReadFile: os.ReadFile})
	if err == nil {
		t.Fatal("validate passed an invalid file, a duplicate and a missing one")
	}
	all := out.String() + errOut.String()
	if strings.Contains(all, "\x1b") || strings.Contains(all, "\a") {
		t.Errorf("validate prints a file name's escape sequence raw:\n%q", all)
	}
	for _, n := range []string{"ok", "bad", "dup", "gone"} {
		if !strings.Contains(all, n+shown+".hcl") {
			t.Errorf("validate does not name %s%s.hcl escaped:\n%s", n, shown, all)
		}
	}
}
