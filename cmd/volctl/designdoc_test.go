package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citation is a comment's pointer into the design: "docs/architecture.md, Lock order" or
// "docs/architecture.md (Lock order)".
var citation = regexp.MustCompile(`docs/architecture\.md(?:, | \()([A-Z][A-Za-z /()-]*?)[)"]`)

// TestDesignCitations holds the code's comments to the design document in the repository: no
// comment cites a design document that is not there, and every rule a comment names by section
// is one docs/architecture.md states ("**Name.**" under "The rules, in one place").
func TestDesignCitations(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	cited := 0
	for _, root := range []string{"../../internal", "."} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(src), "DESIGN"+".md") {
				t.Errorf("%s cites %s, which is not in the repository: cite docs/architecture.md", path, "DESIGN"+".md")
			}
			for _, m := range citation.FindAllStringSubmatch(string(src), -1) {
				cited++
				if !strings.Contains(string(doc), "**"+m[1]+".**") {
					t.Errorf("%s cites docs/architecture.md, %q: the document has no rule of that name", path, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if cited == 0 {
		t.Fatal("no comment cites docs/architecture.md: the pattern no longer matches the comments")
	}
}

// TestGRPCCodesStayInCSI: outside the internal/csi tree (and internal/hostpath, a plugin: a
// gRPC server), no code imports grpc/codes; it asks csi's predicates (csi.IsTimeout,
// csi.IsUnavailable, ...) instead. Tests may import it to inject codes.
func TestGRPCCodesStayInCSI(t *testing.T) {
	const codesPkg = `"google.golang.org/grpc/codes"`
	for _, root := range []string{"../../internal", "."} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path == "../../internal/csi" || path == "../../internal/hostpath" || d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				if imp.Path.Value == codesPkg {
					t.Errorf("%s imports grpc/codes: use csi's predicates (internal/csi/errors.go)", path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
