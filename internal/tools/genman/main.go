// Command genman writes volctl's man pages, one per command, from volctl's command tree:
//
//	go run ./internal/tools/genman docs/man
//
// It is a separate program so that the man page generator (cobra/doc and what it imports) is
// not linked into volctl, whose every process would initialise it (internal/manpages).
package main

import (
	"fmt"
	"os"

	"github.com/volctl/volctl/internal/cli"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/manpages"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] == "" {
		fmt.Fprintf(os.Stderr, "usage: go run ./internal/tools/genman DIR\n(the repository keeps them in %s)\n", manpages.Dir)
		os.Exit(2)
	}
	dir := os.Args[1]
	n, err := manpages.Write(cli.NewRootCmd(cli.NewFactory(iostreams.System())), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genman:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "%d man pages written to %s\n", n, dir)
}
