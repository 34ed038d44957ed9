package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// Report prints a command's error to stderr (unless already shown) and returns the exit code.
// The engine words errors from data a plugin returned (a node ID, a topology): a control
// character in them is shown as an escape (escapeLines), not sent to the terminal. A command
// that succeeded while part of its output never reached stdout fails all the same (unprinted).
func (f *Factory) Report(err error) int {
	if err == nil {
		err = unprinted(f.IO.OutError())
	}
	// A refusal before any command ran (its arguments checked before PersistentPreRunE)
	// advises with the state dir given too (TestArgumentRefusalsCommandCarriesTheStateDirGiven).
	f.adviseStateDir()
	if err != nil && !isSilent(err) && (!readerGone(err) || keptUnprinted(err)) {
		fmt.Fprintf(f.IO.ErrOut, "Error: %s%s%s\n", escapeLines(err.Error()), outOfFilesAdvice(err), f.notFoundAdvice(err))
	}
	return ExitCode(err)
}

// readerGone reports whether err is a write to a pipe whose reader went away (EPIPE, `| head
// -1`), which a command that took SIGPIPE (outliveReaderForGood: one that changes the state,
// from its first lock on) returns where SIGPIPE would have ended it: as quiet as that end,
// exit 1 for its result unprinted (TestCommandThatWritesFinishesWhenItsReaderIsGone), not an
// "Error: write /dev/stdout: broken pipe" after `volctl volume snapshot list | head -1`. But
// for an acting command's result (keptUnprinted), whose error says what was done and stands.
func readerGone(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Op == "write" && errors.Is(pe.Err, syscall.EPIPE)
}

// keptUnprinted reports whether err says what an acting command did before printing its
// result failed (afterDone's doneError): with its reader gone too, that is said on stderr, as
// for a full disk. A claim made and kept, then `exit 1` and nothing on stderr, could not be told
// by a script (`volctl volume claim db --alloc a | head -c0`) from a claim refused or rolled
// back: a script may read its stderr, or log it, where its stdout went
// (TestActingCommandWhoseReaderIsGoneSaysWhatItKept).
func keptUnprinted(err error) bool {
	var de *doneError
	return errors.As(err, &de)
}

// outOfFilesAdvice is what to do, appended to an error that met the end of the open files
// (EMFILE: the process's limit, ENFILE: the system's), which may come from any open volctl
// makes (the state database, a lock file, a plugin's socket) and says only "too many open
// files". An error that keeps the words but not the errno (gRPC's, a plugin's message) may be
// the plugin's own shortage: the advice then names both limits. Go raises the soft limit to
// the hard one at start, so the limit to raise is the hard one. What the command left
// half-done (a create whose intent was recorded), reconcile finishes, as after a kill.
func outOfFilesAdvice(err error) string {
	const again = "then run the command again; `volctl reconcile` finishes what it left half-done."
	limit := "its limit"
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		limit = fmt.Sprintf("its limit of %d open files", lim.Max)
	}
	msg := err.Error()
	switch {
	case errors.Is(err, syscall.ENFILE) || strings.Contains(msg, syscall.ENFILE.Error()):
		return "\nThe system's table of open files is full (fs.file-max): close what holds files open, or raise fs.file-max, " + again
	case errors.Is(err, syscall.EMFILE):
		return fmt.Sprintf("\nvolctl ran out of file descriptors at %s (ulimit -Hn): raise it (ulimit -n 4096 in the shell, LimitNOFILE= in a systemd unit), %s", limit, again)
	case strings.Contains(msg, syscall.EMFILE.Error()):
		return fmt.Sprintf("\nA process ran out of file descriptors: volctl, at %s (ulimit -Hn; raise it with ulimit -n 4096 in the shell, LimitNOFILE= in a systemd unit), "+
			"or, when the words are the plugin's, the plugin (raise its service's limit); %s", limit, again)
	}
	return ""
}

// notFoundAdvice is what to do, appended to an error saying a volume, plugin, group or claim is
// not in the state: name the state dir looked in, as a new user's volume "not found" is most
// often in another one (made with sudo, as root's is /var/lib/volctl, or with another
// VOLCTL_STATE_DIR), or mistyped, which a listing shows.
func (f *Factory) notFoundAdvice(err error) string {
	if !errors.Is(err, engine.ErrNotFound) || engine.IsGoneMeanwhile(err) || engine.IsNotFoundHere(err) {
		return ""
	}
	dir, derr := f.StateDir()
	if derr != nil || strings.Contains(err.Error(), dir) {
		return ""
	}
	return fmt.Sprintf("\nvolctl looked in state dir %s (`volctl status` lists its plugins and volumes, `volctl group status` its groups); "+
		"what was made as another user (sudo) or with another --state-dir or VOLCTL_STATE_DIR is in that state dir, not this one.", shellquote.Arg(dir))
}

// unprinted is the error of a command that succeeded but whose output did not all reach stdout
// (outErr, the first write that failed: a file on a full disk, a closed descriptor), exit 1:
// `volctl validate *.hcl > report` or `volctl --help > usage.txt` must not exit 0 with the file
// empty. Most commands return such an error themselves; cobra's help and a line among many do
// not. A reader gone (EPIPE, `| head`) is not one: where SIGPIPE is not handled it has ended
// volctl quietly already, and where it is (quickstart, a stop under way) writes are to fail
// quietly while the work goes on.
func unprinted(outErr error) error {
	if outErr == nil || errors.Is(outErr, syscall.EPIPE) {
		return nil
	}
	var se *iostreams.StdoutError
	if errors.As(outErr, &se) {
		return outErr // worded already, as every write to stdout that fails is
	}
	return &iostreams.StdoutError{Err: outErr}
}

// RedactError returns err with every secret value and mount flag the state holds replaced by
// [REDACTED] in its text (engine.Redactor), its kind kept for ExitCode. Plugin messages are
// scrubbed as they arrive, but the engine also words errors from data a plugin returned (its
// node ID, a volume's topology), and a hostile plugin may have echoed a secret there. Call it
// before Close: it reads the state only when there is an error and the command opened it.
func (f *Factory) RedactError(ctx context.Context, err error) error {
	if err == nil || f.engine == nil {
		return err
	}
	redact, rerr := f.engine.Redactor(context.WithoutCancel(ctx))
	if rerr != nil {
		return &redactedError{err: err, msg: fmt.Sprintf("the error is withheld: reading the state to redact secrets from it: %v", rerr)}
	}
	if a, ok := f.IO.ErrOut.(*stateDirAdvice); ok {
		a.learn(redact) // the state dir in the error's advice, written once the engine is closed
	}
	if msg := redact(err.Error()); msg != err.Error() {
		return &redactedError{err: err, msg: msg}
	}
	return err
}

// redactedError is an error shown with other text, that still unwraps to itself.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactCrashes has a crash report (internal/crash) scrubbed of every secret value and mount
// flag e's state holds, as RedactError does an error: a panic's value may wrap what a plugin
// echoed, or print a request whole. Call remove before closing e, and neither in a deferred
// call: a panic runs those as it unwinds, before main's crash.Recover reports it, which would
// then report unscrubbed (removed) or withheld (closed).
func redactCrashes(e *engine.Engine) (remove func()) {
	return crash.Redact(func(text string) (string, error) {
		redact, err := e.Redactor(context.Background()) // crash.Redact bounds it in time
		if err != nil {
			return "", fmt.Errorf("reading the state: %w", err)
		}
		return redact(text), nil
	})
}

// withEngine runs fn with e's crash reports scrubbed (redactCrashes), and the advice on ios's
// stderr carrying the state dir scrubbed with e's secrets (stateDirAdvice), then, when fn
// returns, stops that, scrubs fn's error with e's secrets as main's RedactError does a
// command's (main has no engine of these commands' to do it: an agent's or the dashboard's
// error went out unscrubbed, and the state dir in its advice whole:
// TestAgentCrashAdviceDoesNotShowASecretInTheStateDir) and closes e. When fn panics it does
// neither: the report is scrubbed with e open.
func withEngine(ios *iostreams.IOStreams, e *engine.Engine, fn func() error) error {
	unredact := redactCrashes(e)
	a, advised := ios.ErrOut.(*stateDirAdvice)
	if advised {
		a.redactWith(func() *engine.Engine { return e })
	}
	err := fn()
	unredact()
	if err != nil {
		if redact, rerr := e.Redactor(context.Background()); rerr == nil {
			if advised {
				a.learn(redact) // for the advice in the error, written once e is closed
			}
			if msg := redact(err.Error()); msg != err.Error() {
				err = &redactedError{err: err, msg: msg}
			}
		}
	}
	_ = e.Close() // as the deferred close it replaces
	return err
}

// inputSecrets are the secrets a command was given (its volume specs' secrets and mount flags,
// its --secret flags, its plugin specs' exec environments), which the state may not hold: a crash report is scrubbed of them too,
// for the rest of the process (noteSecrets).
var inputSecrets struct {
	sync.Mutex
	values     []string
	words      []string // noteWords
	registered bool
}

// notePluginSecrets is noteSecrets of the exec blocks' environments of plugins.
func notePluginSecrets(plugins []spec.Plugin) {
	for _, p := range plugins {
		if p.Exec != nil {
			for _, v := range p.Exec.Env {
				noteSecrets(v)
			}
		}
	}
}

// noteSecrets adds values to what a crash report is scrubbed of (inputSecrets).
func noteSecrets(values ...string) {
	inputSecrets.Lock()
	defer inputSecrets.Unlock()
	for _, v := range values {
		if v != "" && !slices.Contains(inputSecrets.values, v) {
			inputSecrets.values = append(inputSecrets.values, v)
		}
	}
	if len(inputSecrets.values)+len(inputSecrets.words) == 0 || inputSecrets.registered {
		return
	}
	inputSecrets.registered = true
	crash.Redact(func(text string) (string, error) { return scrubInputs(text), nil })
}

// noteWords adds the plain users a nomad command sends as its only credential (nomad.Client's
// Words) to what a crash report is masked of where each stands as a word of its own
// (nomad.MaskWords, as in what Nomad says), whatever its length: the scrubber of noteSecrets'
// values skips one under 3 bytes (csi's floor), and a user of one or two characters
// (http://q7@host) was printed whole in the address a panic's value holds. A word so short
// costs a report only its own places as a word (a path's "/q7/"), not the stack's.
func noteWords(words ...string) {
	noteSecrets(words...) // scrubbed everywhere, from 3 bytes on, as before
	inputSecrets.Lock()
	for _, w := range words {
		if w != "" && !slices.Contains(inputSecrets.words, w) {
			inputSecrets.words = append(inputSecrets.words, w)
		}
	}
	inputSecrets.Unlock()
	noteSecrets() // registers the scrub when only words too short for it were noted
}

// scrubInputs is a crash report's text scrubbed of the secrets noted (noteSecrets) and masked
// of the words noted (noteWords).
func scrubInputs(text string) string {
	inputSecrets.Lock()
	values, words := slices.Clone(inputSecrets.values), slices.Clone(inputSecrets.words)
	inputSecrets.Unlock()
	return nomad.MaskWords(csi.Scrubber(values)(text), words)
}
