package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// ManDir is where the man pages are kept, in the repository; `go run ./cmd/volctl gen-man
// docs/man` writes them, and a test fails when they differ from the commands.
const ManDir = "docs/man"

// newCmdGenMan is the hidden command that writes a man page per command, from the command tree
// itself, so the pages cannot say other than --help does.
func newCmdGenMan(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-man DIR",
		Short:  "Write the man pages (volctl.1, volctl-volume-claim.1, ...) into DIR",
		Hidden: true,
		Args:   exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := writeManPages(cmd.Root(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "%d man pages written to %s\n", n, args[0])
			return nil
		},
	}
}

// writeManPages writes one page per available command into dir, and removes pages there of
// commands that no longer exist. It returns how many pages it wrote.
func writeManPages(root *cobra.Command, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("gen-man: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "volctl*.1"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return 0, fmt.Errorf("gen-man: %w", err)
		}
	}
	root.DisableAutoGenTag = true // no "Auto generated ... on <date>" line
	header := &doc.GenManHeader{Section: "1", Source: "volctl", Manual: "volctl manual"}
	if err := doc.GenManTreeFromOpts(root, doc.GenManTreeOptions{Header: header, Path: dir, CommandSeparator: "-"}); err != nil {
		return 0, fmt.Errorf("gen-man: %w", err)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "volctl*.1"))
	return len(pages), nil
}

// manDate is the date in a page's .TH line: when the page was generated, not part of what it says.
var manDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*" )"[^"]*"`)
