package engine

import (
	"errors"
	"fmt"

	"github.com/volctl/volctl/internal/store"
)

// Sentinel kinds of engine errors; the command line maps them to exit codes.
var (
	// ErrNotFound: a volume, plugin, claim or group that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: refused because of something else's state — a claim held by another alloc,
	// a volume in use, an immutable field changed. Exit code 4.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: a request that can never succeed as asked (a mode the volume lacks, a missing
	// plugin capability). Exit code 2.
	ErrInvalid = errors.New("invalid request")
	// ErrChangedWhileRead: a read of a state read through a read-only path that another
	// volctl changed meanwhile (store.ErrChangedWhileRead): nothing of it used, harmless; a
	// reader that goes on (events --follow) reads again.
	ErrChangedWhileRead = store.ErrChangedWhileRead
)

// kindError is an error message of one of the sentinel kinds, matched with errors.Is without
// the sentinel's text being appended to the message.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

// errBadAnswer marks a plugin's success that the host contradicts: an RPC answered OK that did
// not do what the CSI spec says it does (a NodePublishVolume that left no directory at the
// target, or a symlink). It is the plugin's verdict, final like an error it returned: the claim
// is rolled back, not left for a reconcile that would get the same answer. Exit code 1.
var errBadAnswer = errors.New("the plugin's answer is contradicted by the host")

// kindWrap is err, matched with errors.Is as kind too, its own chain kept (errors.As still
// finds what it wraps: a *symlinkError naming the link).
type kindWrap struct{ kind, err error }

func (k *kindWrap) Error() string        { return k.err.Error() }
func (k *kindWrap) Unwrap() error        { return k.err }
func (k *kindWrap) Is(target error) bool { return target == k.kind }

func badAnswerf(format string, args ...any) error {
	return &kindError{kind: errBadAnswer, msg: fmt.Sprintf(format, args...)}
}

func notFoundf(format string, args ...any) error {
	return &kindError{kind: ErrNotFound, msg: fmt.Sprintf(format, args...)}
}

func conflictf(format string, args ...any) error {
	return &kindError{kind: ErrConflict, msg: fmt.Sprintf(format, args...)}
}

func invalidf(format string, args ...any) error {
	return &kindError{kind: ErrInvalid, msg: fmt.Sprintf(format, args...)}
}

// StateUnusable reports whether err says the state database cannot be used as it is: replaced
// under this process (a restart opens the new file) or damaged (a backup to restore). The
// agent stops on it (store.Unusable).
func StateUnusable(err error) bool { return store.Unusable(err) }
