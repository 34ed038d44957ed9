// Command volctl orchestrates CSI volumes on one host.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/volctl/volctl/internal/cli"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/noquery"
)

func main() { os.Exit(run()) }

// run builds the root command, runs it, and maps its error to the exit code.
func run() int {
	noquery.Restore() // os.Stdout was hidden while bubbletea's init ran (internal/noquery)
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	defer stop()
	f := cli.NewFactory(iostreams.System())
	err := cli.NewRootCmd(f).ExecuteContext(ctx)
	err = f.RedactError(ctx, err)
	// The exit closes the state database: SQLite leaves its WAL to the next command.
	if cerr := f.CloseAtExit(); err == nil {
		err = cerr
	}
	return f.Report(err)
}

// stopSignals end the command's context, to stop cleanly, rather than the process: SIGINT,
// SIGTERM, and SIGHUP, which the terminal running a command (`volctl agent`, `plugin serve`, a
// claim) sends when it closes, unless SIGHUP was ignored when volctl started (nohup): asking
// for it would take that back.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}
