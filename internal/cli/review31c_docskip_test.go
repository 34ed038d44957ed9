package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
)

// review31c: what TestDocsAdviseCommandsVolctlTakes does not look at, and what it lets pass.
func TestReview31cDocsSkipped(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "..", "README.md"))
	spaces := regexp.MustCompile(` +`)
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, c := range shellquotetest.Commands(strings.ReplaceAll(string(b), "\n", " ")) {
			c = spaces.ReplaceAllString(c, " ")
			if !strings.HasPrefix(c, "volctl ") {
				continue
			}
			if strings.ContainsAny(c, "|.[<>") {
				t.Logf("SKIPPED %s: `%s`", filepath.Base(f), c)
				continue
			}
			if err := parseAdvised(t, c); err != nil && strings.Contains(err.Error(), "received 0") {
				t.Logf("RECEIVED0 %s: `%s`: %v", filepath.Base(f), c, err)
			}
		}
	}
}

// The very advice this change fixed (`volctl volume expand ID` without --size, refused exit 2)
// passes the parse the docs test holds the docs to; so does a release without its --alloc.
func TestReview31cDocsParseLetsTheFixedBugPass(t *testing.T) {
	for _, c := range []string{"volctl volume expand db", "volctl volume release db", "volctl volume expand --size 20GiB"} {
		if err := parseAdvised(t, c); err == nil {
			t.Errorf("parseAdvised(%q) = nil: the docs test would pass a doc quoting it, which volctl refuses (exit 2)", c)
		} else if strings.Contains(err.Error(), "received 0") {
			t.Errorf("parseAdvised(%q) = %v: the docs test ignores that error, and would pass a doc quoting it", c, err)
		}
	}
}
