// Package cli holds volctl's cobra commands: one file per noun and verb, each with an options
// struct filled by flags and a run function that takes it, so tests can build options directly.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// Factory carries what every command needs: the streams, the global flags, and constructors
// for the heavier pieces, built only when a command asks for them.
type Factory struct {
	IO *iostreams.IOStreams

	stateDirFlag string
	ownState     bool // the command run works in a state dir of its own (ownStateDir): no --state-dir advice
	verbose      bool
	verboseGiven func() bool // whether --verbose was given, true or false: it wins over VOLCTL_LOG
	lookupEnv    func(string) (string, bool)
	// advise rewrites the volctl commands a text advises to carry the --state-dir given
	// (stateDirAdvice.Advise); nil when none was given.
	advise  func(string) string
	geteuid func() int
	// completionTimeout, when set, replaces the product's bound on a completion
	// (completionTimeout, the constant): tests of what completion offers set one that load
	// cannot reach, so that a starved machine does not read as nothing to offer.
	completionTimeout time.Duration
	// args is the command line the tree was built for (NewRootCmdFor: os.Args[1:]): a
	// completion reads by which name it was asked for a command (completedAs).
	args []string

	engine *engine.Engine
	// unredact unregisters the engine's scrubbing of crash reports (redactCrashes).
	unredact func()
}

// NewFactory returns a Factory for the process's environment.
func NewFactory(ios *iostreams.IOStreams) *Factory {
	return &Factory{IO: ios, lookupEnv: os.LookupEnv, geteuid: os.Geteuid}
}

// StateDir resolves the state directory as docs/architecture.md (Command line) says: --state-dir, $VOLCTL_STATE_DIR,
// /var/lib/volctl for root, else $XDG_STATE_HOME/volctl, or $HOME/.local/state/volctl when it is unset or relative.
func (f *Factory) StateDir() (string, error) {
	dir := f.stateDirFlag
	if dir == "" {
		var set bool
		if dir, set = f.lookupEnv("VOLCTL_STATE_DIR"); set && dir == "" {
			// Set empty, as `VOLCTL_STATE_DIR=$STATE volctl ...` sets it with $STATE unset, it
			// was taken for not set: root's command acted on /var/lib/volctl, the system's state,
			// where --state-dir "" is refused for that reason (TestEmptyStateDirVariableIsRefused).
			return "", usageError("VOLCTL_STATE_DIR is set but empty: give it the state dir, or unset it for the default (a variable left unset?)")
		}
	}
	// Taken as written, " /srv/state" was a relative path, and volctl made a new, empty state
	// under the working directory and showed it, exit 0 (TestStateDirWithBlanksOrControlsIsRefused).
	if stray := spec.StrayText(dir); stray != "" {
		from := "--state-dir"
		if f.stateDirFlag == "" {
			from = "VOLCTL_STATE_DIR"
		}
		return "", usageError("%s %q %s: write the state dir's path without it, or leave %s out for the default", from, dir, stray, from)
	}
	if strings.HasPrefix(dir, "-") {
		// The next flag taken as the value, the value left out (`--state-dir --json`, or
		// `--state-dir $STATE --json` with $STATE unset): it made a state dir named "--json"
		// in the working directory and showed it, exit 0 (TestStateDirThatIsAFlagIsRefused).
		from := "--state-dir"
		if f.stateDirFlag == "" {
			from = "VOLCTL_STATE_DIR"
		}
		return "", usageError("%s %q begins with \"-\", a flag taken as its value (was the value left out?): write ./%s for a directory so named", from, dir, dir)
	}
	if strings.HasPrefix(dir, "~") {
		// Only a shell expands "~", and not in quotes, after "=" (--state-dir=~/volctl) or in
		// a service's Environment=: taken as a relative path, it made a directory named "~"
		// in the working directory.
		return "", usageError("state dir %q begins with \"~\", which only a shell expands, and it was not expanded (quoted, after \"=\", or in a service's environment): write the full path ($HOME/... for your home directory)", dir)
	}
	if dir == "" && f.geteuid() == 0 {
		dir = "/var/lib/volctl"
	}
	if dir == "" {
		base := f.getenv("XDG_STATE_HOME")
		// A relative one is invalid (the XDG spec: ignore it), not taken from the working
		// directory: that would give each directory volctl runs in a state of its own.
		if !filepath.IsAbs(base) {
			home := f.getenv("HOME")
			if home == "" {
				return "", errors.New("state dir: set --state-dir or VOLCTL_STATE_DIR: $HOME is not defined")
			}
			if !filepath.IsAbs(home) {
				// Not taken from the working directory either, for the same reason
				// (TestRelativeHomeIsNotTakenFromTheWorkingDirectory).
				return "", fmt.Errorf("state dir: set --state-dir or VOLCTL_STATE_DIR: $HOME is %q, not an absolute path, which would give each directory volctl runs in a state of its own", home)
			}
			base = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(base, "volctl")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("state dir %q: %w", dir, err)
	}
	if !utf8.ValidString(abs) {
		// The staging and publish paths under it go to the plugin in CSI's strings, which are
		// UTF-8: a claim was recorded, its NodeStageVolume and the rollback's NodeUnstageVolume
		// could not be encoded, and it was left for a reconcile that could never finish it
		// (TestClaimInANonUTF8StateDirLeavesNoClaimForReconcile).
		return "", usageError("state dir %q is not UTF-8: the paths volctl makes under it are sent to plugins in CSI's UTF-8 strings, which cannot carry it; give a state dir whose path is UTF-8", abs)
	}
	return abs, nil
}

// logLevels are the values VOLCTL_LOG takes, any case: slog's four, debug adding RPC traces.
// (It is read by its name, getenv("VOLCTL_LOG"), where TestEveryVariableIsDocumentedInOnePlace
// finds it.)
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
	// Nomad's and Consul's names: trace, their most verbose level, is volctl's most verbose,
	// debug; warning is warn. A user coming from them sets what they know.
	"trace": slog.LevelDebug, "warning": slog.LevelWarn}

// checkLogVariable refuses a VOLCTL_LOG that names no level, before a command does anything:
// only "debug" was read, and any other value, "info", "warn", "error" or a mistyped "debgu", was
// the default, silently (TestLogVariableTakesTheLevelsOrIsRefused). Set empty, it is not set.
func (f *Factory) checkLogVariable() error {
	v := f.getenv("VOLCTL_LOG")
	if _, ok := logLevels[strings.ToLower(v)]; ok || v == "" {
		return nil
	}
	return usageError("VOLCTL_LOG=%q is not a log level: set it to debug (RPC traces too, as --verbose), info, warn or error (Nomad's trace and warning are taken too), "+
		"or unset it for the default (warnings and errors; the agent's info too)", v)
}

// LogLevel is the level of the logs a command writes, def when nothing says otherwise:
// --verbose given, debug (--verbose=false: not debug, def where VOLCTL_LOG says debug, as every
// flag wins over its variable, TestFlagWinsOverItsVariable), else VOLCTL_LOG's level (checkLogVariable refused any other
// value before the command ran).
func (f *Factory) LogLevel(def slog.Level) slog.Level {
	if f.verbose {
		return slog.LevelDebug
	}
	level, ok := logLevels[strings.ToLower(f.getenv("VOLCTL_LOG"))]
	if !ok {
		return def
	}
	if f.verboseGiven != nil && f.verboseGiven() && level == slog.LevelDebug {
		return def // --verbose=false: not debug, whatever VOLCTL_LOG says; a quieter level it names holds
	}
	return level
}

// Logger returns the logger commands and the layers below them use: warnings and errors on
// stderr by default, debug with --verbose, the level VOLCTL_LOG names.
func (f *Factory) Logger() *slog.Logger {
	return slog.New(logHandler(f.IO.ErrOut, false, f.LogLevel(slog.LevelWarn)))
}

// logHandler is the log handler writing to stderr w, as text or JSON: on stderr as it is, not
// through stateDirAdvice, whose words inserted into a log line's quoted message are bytes the
// line's format does not escape (a state dir holding `"` made a JSON line no longer JSON:
// TestAgentJSONLogStaysJSONWithTheStateDirsAdvice). A log is data a shipper parses; the advice
// a person pastes is in the command's own messages.
func logHandler(w io.Writer, json bool, level slog.Level) slog.Handler {
	if a, ok := w.(*stateDirAdvice); ok {
		w = a.w
	}
	if json {
		return slog.NewJSONHandler(w, jsonLogOptions(level))
	}
	return slog.NewTextHandler(w, logOptions(level))
}

// logOptions are every logger's (commands', the agent's, the dashboard's log file): level, and
// long words cut (cutLongWords).
func logOptions(level slog.Level) *slog.HandlerOptions {
	return &slog.HandlerOptions{Level: level, ReplaceAttr: cutLongWords}
}

// jsonLogOptions is logOptions for the JSON log: encoding/json escapes C0 controls itself, and
// leaves C1 (U+009B is a terminal's CSI), bidi overrides and characters that show as nothing
// raw, which a plugin's text (its driver name, its errors) carries to whoever tails the log on
// a terminal. A value holding one is written escaped as a terminal line is
// (spec.EscapeControl); before, `--log-format json` wrote them raw
// (TestAgentJSONLogEscapesPluginText).
func jsonLogOptions(level slog.Level) *slog.HandlerOptions {
	return &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		return mapAttrText(cutLongWords(groups, a), func(s string) string {
			if strings.ContainsFunc(s, rawInJSON) {
				return spec.EscapeControl(s)
			}
			return s
		})
	}}
}

// rawInJSON reports a character encoding/json writes as it is that a terminal acts on or shows
// as nothing: a C1 control, a bidi embedding, override or isolate, an invisible character.
func rawInJSON(r rune) bool {
	return r >= 0x7f && r <= 0x9f || spec.IsBidiControl(r) || spec.IsInvisible(r)
}

// cutLongWords is a log line's message or value with each word past maxEchoedWord cut, as
// escapeLines cuts an error's: a plugin's ID or a typed one of 10,000 bytes was logged whole.
func cutLongWords(_ []string, a slog.Attr) slog.Attr {
	return mapAttrText(a, func(s string) string { return spec.CutWords(s, maxEchoedWord) })
}

// mapAttrText is a log attribute with f applied to its text: a string, an error's words, each
// string of a []string (the restore's targets, which encoding/json writes element by element:
// TestJSONLogEscapesAndCutsEachStringOfAList). An attribute f leaves as it was, or of another
// kind, is returned as it is.
func mapAttrText(a slog.Attr, f func(string) string) slog.Attr {
	switch v := a.Value.Any().(type) {
	case string:
		if m := f(v); m != v {
			return slog.String(a.Key, m)
		}
	case error:
		if s := v.Error(); f(s) != s {
			return slog.String(a.Key, f(s))
		}
	case []string:
		var out []string
		for i, s := range v {
			m := f(s)
			if m != s && out == nil {
				out = append(make([]string, 0, len(v)), v[:i]...)
			}
			if out != nil {
				out = append(out, m)
			}
		}
		if out != nil {
			return slog.Any(a.Key, out)
		}
	}
	return a
}

// Engine opens the engine on the state dir once per process; Close closes it.
func (f *Factory) Engine(ctx context.Context) (*engine.Engine, error) {
	return f.openEngine(ctx, false)
}

// ReadingEngine is Engine for a command that reads and seldom writes (a list, a status): its
// database is opened without the write connection, which a write opens if one comes
// (engine.Config.Reading). A process has one engine: the first of Engine and ReadingEngine
// called opens it.
func (f *Factory) ReadingEngine(ctx context.Context) (*engine.Engine, error) {
	return f.openEngine(ctx, true)
}

func (f *Factory) openEngine(ctx context.Context, reading bool) (*engine.Engine, error) {
	if f.engine != nil {
		return f.engine, nil
	}
	dir, err := f.StateDir()
	if err != nil {
		return nil, err
	}
	// A command that changes the state finishes what it started when its reader is gone
	// (outliveReaderForGood, from the engine's first lock on).
	e, err := engine.Open(ctx, engine.Config{StateDir: dir, Logger: f.Logger(), Reading: reading, BeforeLock: outliveReaderForGood})
	if err != nil {
		return nil, stateDirError(dir, err)
	}
	f.engine = e
	f.unredact = redactCrashes(e)
	return e, nil
}

// stateDirError names the state dir in an error opening the engine on it, once: an error about
// the state dir itself (*store.DirError) names it already, any other gets it put in front.
func stateDirError(dir string, err error) error {
	if de := (*store.DirError)(nil); errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("state dir %s: %w", dir, err)
}

// Close releases what the commands opened.
func (f *Factory) Close() error { return f.closeEngine((*engine.Engine).Close) }

// CloseAtExit is Close for main, whose process exits right after: the state database is left
// for the exit to close (engine.CloseAtExit), so a command does not pay SQLite's checkpoint of
// the WAL, its fsyncs and the WAL's deletion, and the next command does not create a new WAL.
func (f *Factory) CloseAtExit() error { return f.closeEngine((*engine.Engine).CloseAtExit) }

// closeEngine closes the engine, if one was opened, with close, and forgets it.
func (f *Factory) closeEngine(close func(*engine.Engine) error) error {
	if f.engine == nil {
		return nil
	}
	if f.unredact != nil {
		f.unredact()
	}
	err := close(f.engine)
	f.engine, f.unredact = nil, nil
	return err
}

// getenv is the variable k, empty when it is not set.
func (f *Factory) getenv(k string) string {
	v, _ := f.lookupEnv(k)
	return v
}
