package cli

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// outliveLogReader makes a write to a stdout or stderr that nobody reads any more fail (EPIPE)
// instead of killing volctl with SIGPIPE, until the returned function is called. The commands
// that run for good (`volctl agent`, `plugin serve`) outlive what reads their log: the `tee` of
// `volctl agent 2>&1 | tee log` killed, a journald restarted. An agent dying at its next log
// line would leave its plugins unsupervised and its pid files behind; a plugin would drop every
// mount's RPCs. A handler, not SIG_IGN: the plugins the agent starts get SIGPIPE's default, as
// a handler does not survive exec and an ignored signal would.
func outliveLogReader() (restore func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	return func() { signal.Stop(ch) }
}

// outliveReaderForGood is outliveLogReader for the rest of the process, from the engine's first
// lock on (engine.Config.BeforeLock), for a command that changes the state: piped into a reader
// that stops reading (`volctl volume claim db --alloc a --verbose 2>&1 | head -1`), it was
// killed by SIGPIPE at its first write after that, between two RPCs or two commits, its claim
// or release left half-way for a reconcile to finish
// (TestCommandThatWritesFinishesWhenItsReaderIsGone). Its writes now fail with EPIPE and the
// work goes on to its end, exit 1 for its result unprinted. A command that takes no lock (a
// list, a status, `events`, --help) keeps SIGPIPE's kill: nothing is left half-done by it, and
// it stops at once and quietly, as `| head` expects (TestReadingCommandEndsQuietlyWhenItsReaderIsGone).
func outliveReaderForGood() {
	outliveOnce.Do(func() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) })
}

var outliveOnce sync.Once

// stopSignalWords names the signals that stop a long-running command, as cmd/volctl's main
// takes them: SIGHUP only when volctl did not start with it ignored (nohup).
func stopSignalWords() string {
	if signal.Ignored(syscall.SIGHUP) {
		return "SIGINT or SIGTERM"
	}
	return "SIGINT, SIGTERM or SIGHUP"
}
