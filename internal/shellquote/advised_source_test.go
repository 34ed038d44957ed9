package shellquote

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// rawVerbInCommand is a volctl command in backquotes, as messages advise one, with a fmt verb
// in it that prints a string as it is (%s, %v) or Go-quoted (%q, whose "$x" a shell expands).
var rawVerbInCommand = regexp.MustCompile("`volctl [^`]*%[-+# 0-9.]*[sqv][^`]*`")

// TestAdvisedCommandsQuoteTheirWords: no message volctl formats advises a volctl command with
// a name put in raw by a fmt verb: an ID may hold a space, a quote or a "$" (spec.ValidateID
// takes them), and `volctl plugin status %s` pasted for a plugin "my hp" ran `plugin status`
// with two arguments, refused. Each such command is built by Command or CommandFlags, its words
// quoted, and the message takes it whole (`%s`). Found so: a lock file's loss advised `volctl
// volume status %s`, a stored topology `volctl plugin status %s`, and a snapshot delete that a
// create raced `volctl volume snapshot list --plugin %s`.
func TestAdvisedCommandsQuoteTheirWords(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				if m := rawVerbInCommand.FindString(s); m != "" {
					t.Errorf("%s: advises %s, a word put in by a fmt verb unquoted for a shell: build the command with shellquote.Command or CommandFlags",
						fset.Position(lit.Pos()), m)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 100 {
		t.Fatalf("read %d Go files: the walk missed the source", checked)
	}
}
