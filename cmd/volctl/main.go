// Command volctl orchestrates CSI volumes on one host.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/volctl/volctl/internal/cli"
	"github.com/volctl/volctl/internal/iostreams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	f := cli.NewFactory(iostreams.System())
	err := cli.NewRootCmd(f).ExecuteContext(ctx)
	stop()
	os.Exit(f.Report(err))
}
