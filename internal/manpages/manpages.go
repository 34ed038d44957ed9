// Package manpages writes volctl's man pages from its command tree (cobra/doc), so the pages
// cannot say other than --help does. It is not linked into volctl: `go run
// ./internal/tools/genman docs/man` writes the pages, and internal/cli's TestManPagesInSync
// checks the committed ones. cobra/doc brings go-md2man, blackfriday and a YAML parser, whose
// package initialisation every volctl process would pay for a command no user runs
// (cmd/volctl's TestBinaryLeavesOutManPageGenerator keeps them out).
package manpages

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Dir is where the man pages are kept, in the repository.
const Dir = "docs/man"

// Regenerate is the command that writes them, for messages that ask for it.
const Regenerate = "go run ./internal/tools/genman " + Dir

// Write writes one page per available command of root's tree into dir, and removes pages
// there of commands that no longer exist. It returns how many pages it wrote.
func Write(root *cobra.Command, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("writing the man pages: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "volctl*.1"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return 0, fmt.Errorf("writing the man pages: removing the old page: %w", err)
		}
	}
	root.DisableAutoGenTag = true // no "Auto generated ... on <date>" line
	header := &doc.GenManHeader{Section: "1", Source: "volctl", Manual: "volctl manual"}
	if err := doc.GenManTreeFromOpts(root, doc.GenManTreeOptions{Header: header, Path: dir, CommandSeparator: "-"}); err != nil {
		return 0, fmt.Errorf("writing the man pages into %s: %w", dir, err)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "volctl*.1"))
	return len(pages), nil
}
