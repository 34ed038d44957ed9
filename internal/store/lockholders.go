package store

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/procfs"
	"github.com/volctl/volctl/internal/shellquote"
)

// LockHolder is a process holding a flock that another volctl waits for, as /proc names it: a
// wait that says only "another volctl is working on it" leaves the user to guess which process
// to resume or end, and a process stopped by a signal (^Z, SIGSTOP) holds the lock until one of
// the two happens.
type LockHolder struct {
	Pid int
	// Command is the holder's command line up to its first flag ("volctl volume claim db"): the
	// words after it may be secrets (--secret), which an error must not print. "" when /proc does
	// not say (the process has gone, or is another user's under hidepid).
	Command string
	// Stopped is true when the process is stopped by a signal (state T in /proc/PID/stat).
	Stopped bool
}

// String is "pid 12: volctl volume claim db, stopped".
func (h LockHolder) String() string {
	s := "pid " + strconv.Itoa(h.Pid)
	if h.Command != "" {
		s += ": " + h.Command
	}
	if h.Stopped {
		s += ", stopped"
	}
	return s
}

// LockHolders is "pid 12: volctl volume claim db; pid 34: volctl agent", or "" when there are none.
func LockHolders(hs []LockHolder) string {
	words := make([]string, len(hs))
	for i, h := range hs {
		words[i] = h.String()
	}
	return strings.Join(words, "; ")
}

// parenthesized is " (s)", or "" for an empty s.
func parenthesized(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// AllStopped reports whether there are holders and every one is stopped by a signal: then
// nothing will let the lock go until someone resumes or ends them.
func AllStopped(hs []LockHolder) bool {
	for _, h := range hs {
		if !h.Stopped {
			return false
		}
	}
	return len(hs) > 0
}

// FlockHolders lists the processes other than this one holding a flock on the file fi is the
// FileInfo of, as /proc/locks lists them (at most shownNames); nil when none can be named (no
// /proc, or a holder in another PID namespace).
func FlockHolders(fi fs.FileInfo) []LockHolder {
	return lockHolders(fi, func(fields []string) bool { return fields[1] == "FLOCK" })
}

// walWriteLock is the byte of the -shm file whose POSIX write lock is SQLite's WAL write lock
// (UNIX_SHM_BASE 120 + WAL_WRITE_LOCK 0).
const walWriteLock = 120

// writeLockHolders lists the processes other than this one holding the state database's write
// lock: a POSIX (or open file description) write lock over byte walWriteLock of its -shm file.
func (s *Store) writeLockHolders() []LockHolder {
	fi, err := os.Stat(s.path + "-shm")
	if err != nil {
		return nil
	}
	return lockHolders(fi, func(fields []string) bool {
		if (fields[1] != "POSIX" && fields[1] != "OFDLCK") || fields[3] != "WRITE" || len(fields) < 8 {
			return false
		}
		start, err := strconv.ParseInt(fields[6], 10, 64)
		if err != nil || start > walWriteLock {
			return false
		}
		end, err := strconv.ParseInt(fields[7], 10, 64)
		return fields[7] == "EOF" || (err == nil && end >= walWriteLock)
	})
}

// lockHolders lists the processes other than this one holding a lock on the file fi is the
// FileInfo of that match says is the one waited for, as /proc/locks lists them (at most
// shownNames).
func lockHolders(fi fs.FileInfo, match func(fields []string) bool) []LockHolder {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer locks.Close()
	// A line: "1: FLOCK  ADVISORY  READ  1234 08:01:5678 0 EOF", "2: POSIX  ADVISORY  WRITE 1234
	// 08:01:5679 120 120"; a waiter's has "->" after the number. The device is the major and
	// minor number in hex.
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	self := os.Getpid()
	var hs []LockHolder
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != id || !match(fields) {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 || pid == self || len(hs) >= shownNames || held(hs, pid) {
			continue
		}
		hs = append(hs, holderOf(pid))
	}
	return hs
}

// StoppedHolders says that holders, all stopped by a signal for d, keep a lock, and what to do:
// "held by pid 12: volctl volume claim db, stopped by a signal (^Z or SIGSTOP) for 10s, ...".
func StoppedHolders(holders []LockHolder, d time.Duration) string {
	pids := make([]string, len(holders))
	for i, h := range holders {
		pids[i] = strconv.Itoa(h.Pid)
	}
	list := strings.Join(pids, " ")
	return fmt.Sprintf("held by %s by a signal (^Z or SIGSTOP) for %s, which keeps it until resumed or ended: "+
		"resume it (`kill -CONT %s`, or `fg` in its shell) or end it (`kill %s`; `volctl reconcile` then finishes what it left half-done), and run this again",
		LockHolders(holders), d.Round(time.Second), list, list)
}

// HolderWatch follows who holds a lock a process waits for, looking every holderCheck: a wait
// says who, and gives up once every holder has been stopped by a signal for a while (the
// engine's volume and controller locks, the state database's write lock).
type HolderWatch struct {
	holders      func() []LockHolder
	last         []LockHolder
	looked       time.Time
	stoppedSince time.Time
}

// NewHolderWatch watches the holders holders lists.
func NewHolderWatch(holders func() []LockHolder) *HolderWatch {
	return &HolderWatch{holders: holders}
}

// Holders is who held the lock when Look last looked.
func (w *HolderWatch) Holders() []LockHolder { return w.last }

// holderCheck is how often a wait for a lock looks again at who holds it.
const holderCheck = time.Second

// DefaultStoppedWait is how long a wait for a lock lasts once every holder is stopped by a signal.
const DefaultStoppedWait = 10 * time.Second

// Look reads the holders again when holderCheck has passed, and returns how long they have all
// been stopped (0 when one runs, or none is known).
func (w *HolderWatch) Look(now time.Time) time.Duration {
	if now.Sub(w.looked) >= holderCheck {
		w.looked, w.last = now, w.holders()
		switch {
		case !AllStopped(w.last):
			w.stoppedSince = time.Time{}
		case w.stoppedSince.IsZero():
			w.stoppedSince = now
		}
	}
	if w.stoppedSince.IsZero() {
		return 0
	}
	return now.Sub(w.stoppedSince)
}

func held(hs []LockHolder, pid int) bool {
	for _, h := range hs {
		if h.Pid == pid {
			return true
		}
	}
	return false
}

// holderOf reads what /proc says of pid: its command line up to the first flag, and whether it
// is stopped. Both are read through a thread that runs (procfs.Dir): a process whose first
// thread has exited shows through /proc/<pid> no command line and the state of a zombie, never
// stopped, and a wait on it stopped did not give up (TestLockHolderWhoseFirstThreadExited).
func holderOf(pid int) LockHolder {
	h := LockHolder{Pid: pid}
	dir := procfs.Dir("/proc", pid)
	if b, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
		var words []string
		for i, w := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
			if i == 0 {
				w = filepath.Base(w)
			} else if strings.HasPrefix(w, "-") || len(words) >= 6 {
				break
			}
			words = append(words, w)
		}
		if len(words) > 0 && words[0] != "" {
			h.Command = shellquote.Command(shellquote.Arg(words[0]), words[1:]...)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "stat")); err == nil {
		// "12 (comm) T ...": the state follows the last ')', since comm may hold one.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			rest := strings.Fields(string(b[i+1:]))
			h.Stopped = len(rest) > 0 && rest[0] == "T"
		}
	}
	return h
}
