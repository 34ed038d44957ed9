package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	sqlite3 "modernc.org/sqlite/lib"
)

// A process keeps the database file it opened, by inode, for as long as it runs. When that file
// is replaced under it (a backup moved over volctl.db, the state dir moved aside and another put
// in its place), SQLite goes on without a word: its commits land in the WAL, which it reaches by
// name and so shares with the new file's readers, and its checkpoints copy them into the old file
// (unlinked, or under the old name) and restart the WAL. Every commit it checkpointed is then
// gone from the state every other volctl reads, though each was reported done. So a write
// transaction first checks that the file at the path is still the one opened: one stat, no
// statement; a reader is left to read its snapshot.

// ErrReplaced is matched by the error of a write after the state database file was replaced or
// removed under the process.
var ErrReplaced = errors.New("state database file was replaced while this volctl had it open")

// fileID is a file's device and inode.
type fileID struct{ dev, ino uint64 }

// idAt is the device and inode of the file at path (a stat(2), without os.Stat's allocations:
// it runs before every write transaction).
func idAt(path string) (fileID, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return fileID{dev: st.Dev, ino: st.Ino}, nil
}

// CheckFile returns ErrReplaced, saying what to do, when the database file at the store's path
// is not the one it opened: a long-running process (the agent) checks it before each pass, as
// a pass that writes nothing would not find out, and would go on reading the old file.
func (s *Store) CheckFile() error { return s.checkFile() }

// CheckFirstFile is CheckFile for a reader that goes on from what it read of the file it
// opened first (events --follow, from an event ID): a store opened immutable on a read-only
// file system reads whatever file is put at its path (readPool), which CheckFile lets be, and
// such a reader went on in a restored backup from an ID of the old file, past the events every
// volctl recorded in the new one, none printed, nothing said
// (TestEventsFollowOnAReadOnlyStateMissesNoEventOfARestoredBackup).
func (s *Store) CheckFirstFile() error {
	if s.ro == nil {
		return s.checkFile()
	}
	return s.checkAgainst(s.ro.first)
}

// Unusable reports whether err says the state database cannot be used as it is: replaced under
// this process (ErrReplaced: a restart opens the new file) or damaged (SQLITE_CORRUPT,
// SQLITE_NOTADB: a backup to restore). A process that runs on (the agent) stops then, saying
// so, rather than pass after pass on what it cannot read or has lost.
func Unusable(err error) bool {
	switch sqliteCode(err) & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return errors.Is(err, ErrReplaced)
}

// checkFile returns ErrReplaced, saying what to do, when the database file at s.path is not the
// one s opened.
func (s *Store) checkFile() error {
	var opened fileID
	if s.ro == nil {
		opened = s.file
	} else {
		// readPool changes both under this lock, from another goroutine's View.
		s.ro.mu.Lock()
		immutable := s.ro.immutable
		opened = s.file
		s.ro.mu.Unlock()
		if immutable {
			return nil // its pool is opened again on the file at the path when that changes (readPool)
		}
	}
	return s.checkAgainst(opened)
}

// checkAgainst is checkFile's ErrReplaced when the file at s.path is not opened.
func (s *Store) checkAgainst(opened fileID) error {
	id, err := idAt(s.path)
	if err == nil && id == opened {
		return nil
	}
	what := "another file is at its path now"
	if err != nil {
		what = err.Error()
	}
	return fmt.Errorf("state %s: %w (%s; a backup restored over it, or the state dir moved): nothing written, since this volctl's writes would go to the old file and be lost; restart this volctl",
		s.path, ErrReplaced, what)
}
