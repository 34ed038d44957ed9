package cli

import (
	"os"
	"os/signal"
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

// outliveReaderForGood is outliveLogReader for the rest of the process, for a command that may
// change the state (Factory.Engine): piped into a reader that stops reading (`volctl volume
// claim db --alloc a --verbose 2>&1 | head -1`), it was killed by SIGPIPE at its first write
// after that, between two RPCs or two commits, its claim or release left half-way for a
// reconcile to finish (TestCommandThatWritesFinishesWhenItsReaderIsGone). Its writes now fail
// (EPIPE, which Report takes as quietly as the kill) and the work goes on to its end. A
// command that only reads (ReadingEngine, --help) keeps SIGPIPE's kill: nothing is left
// half-done by it, and it stops at once, as `| head` expects.
func outliveReaderForGood() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// stopSignalWords names the signals that stop a long-running command, as cmd/volctl's main
// takes them: SIGHUP only when volctl did not start with it ignored (nohup).
func stopSignalWords() string {
	if signal.Ignored(syscall.SIGHUP) {
		return "SIGINT or SIGTERM"
	}
	return "SIGINT, SIGTERM or SIGHUP"
}
