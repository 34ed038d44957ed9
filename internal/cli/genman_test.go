package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/manpages"
)

// manDate is the date in a page's .TH line: when the page was generated, not part of what it says.
var manDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*" )"[^"]*"`)

// The committed man pages are what the commands generate: a flag, command or help text changed
// without regenerating them fails here, with the command that does.
func TestManPagesInSync(t *testing.T) {
	const regen = "the man pages in " + manpages.Dir + " differ from the commands; regenerate them: " + manpages.Regenerate
	ios, _, _, _ := iostreams.Test()
	gen := t.TempDir()
	if _, err := manpages.Write(NewRootCmd(NewFactory(ios)), gen); err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join("..", "..", filepath.FromSlash(manpages.Dir))
	names := func(dir string) []string {
		paths, _ := filepath.Glob(filepath.Join(dir, "volctl*.1"))
		for i, p := range paths {
			paths[i] = filepath.Base(p)
		}
		return paths
	}
	want, got := names(gen), names(committed)
	if len(want) == 0 {
		t.Fatal("the man page generator wrote no pages")
	}
	for _, n := range want {
		if !slices.Contains(got, n) {
			t.Errorf("%s is missing: %s", n, regen)
		}
	}
	for _, n := range got {
		if !slices.Contains(want, n) {
			t.Errorf("%s is for a command that no longer exists: %s", n, regen)
		}
	}
	for _, n := range want {
		a, err1 := os.ReadFile(filepath.Join(gen, n))
		b, err2 := os.ReadFile(filepath.Join(committed, n))
		if err1 != nil || err2 != nil {
			continue // reported above
		}
		// The .TH line's month is when a page was generated, not what it says.
		if manDate.ReplaceAllString(string(a), `$1""`) != manDate.ReplaceAllString(string(b), `$1""`) {
			t.Errorf("%s is out of date: %s", n, regen)
		}
	}
}
