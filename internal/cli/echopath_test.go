package cli

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPathsWithControlCharactersAreQuotedInErrors: a spec file or socket named with a newline
// or an escape (as a directory or file name may be) is quoted in the error that names it, the
// character written out. Reported errors keep their own newlines (escapeLines), so a raw
// newline in a name made the rest of it read as a line of its own ("b.hcl: no such file or
// directory"), and an escape sequence reached the terminal.
func TestPathsWithControlCharactersAreQuotedInErrors(t *testing.T) {
	h := newCLIHarness(t)
	dir := t.TempDir()
	for _, name := range []string{"a\nb", "a\x1b[31mb"} {
		file, socket := filepath.Join(dir, name+".hcl"), filepath.Join(dir, name+".sock")
		for _, args := range [][]string{
			{"validate", file},
			{"volume", "register", file},
			{"plugin", "register", file},
			{"plugin", "register", "--id", "p", "--socket", socket, "--wait", "0"},
			{"plugin", "probe", "--socket", socket},
		} {
			code, _, errOut := h.runReported(args...)
			shown := strconv.Quote(file)
			if args[len(args)-1] != file {
				shown = strconv.Quote(socket)
			}
			if code == 0 || !strings.Contains(errOut, shown) || strings.Count(errOut, "\n") != 1 || strings.Contains(errOut, "\x1b") {
				t.Errorf("volctl %q exited %d, printing %q; want an error naming %s, on one line, no raw control character", args, code, errOut, shown)
			}
		}
	}
}
