// Command volctl orchestrates CSI volumes on one host.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/cli"
	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/noquery"
)

func main() { os.Exit(run()) }

// run builds the root command, runs it, and maps its error to the exit code.
func run() int {
	// A panic exits with crash.ExitCode, not Go's 2 (a usage error in volctl's table); those
	// of the goroutines volctl starts too (crash.Go).
	defer crash.Recover()
	noquery.Restore() // os.Stdout was hidden while bubbletea's init ran (internal/noquery)
	cli.KeepOwnerAccess()
	cli.KeepSecretsOutOfCoreDumps()
	ctx, stop := stopContext(context.Background())
	defer stop()
	f := cli.NewFactory(iostreams.System())
	err := cli.NewRootCmdFor(f, os.Args[1:]).ExecuteContext(ctx)
	err = cli.SaySignal(ctx, f.RedactError(ctx, err))
	// The exit closes the state database: SQLite leaves its WAL to the next command.
	if cerr := f.CloseAtExit(); err == nil {
		err = cerr
	}
	return f.Report(err)
}

// stopContext is ctx ended by the first of stopSignals, as signal.NotifyContext's is (a second
// one is ignored until the process exits). From that signal on, SIGPIPE no longer kills volctl: a write to
// a stdout or stderr nobody reads fails instead. The terminal whose closing sent SIGHUP ended
// what read volctl's output with it (`volctl agent 2>&1 | tee log`), and the clean stop the
// signal asked for, which logs each step, would otherwise die of SIGPIPE at its first line,
// leaving the plugins and pid files a stop removes.
func stopContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals()...)
	crash.Go(func() {
		select {
		case sig := <-ch:
			signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
			cancel(cli.StopSignal{Name: unix.SignalName(sig.(syscall.Signal))})
		case <-ctx.Done():
		}
	})
	// stop ends ctx and leaves the signals with ch: run's caller exits right after it, and
	// handing them back (signal.Stop) is one round trip per signal to the runtime's signal
	// thread, a wake-up of another thread each way, paid by every process at its exit for
	// nothing (perf24: 15 of a `volctl version`'s 35–48 futex calls).
	return ctx, func() { cancel(nil) }
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
