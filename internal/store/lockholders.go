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

	"golang.org/x/sys/unix"

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
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer locks.Close()
	// A line: "1: FLOCK  ADVISORY  READ  1234 08:01:5678 0 EOF"; a waiter's has "->" after
	// the number. The device is the major and minor number in hex.
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	self := os.Getpid()
	var hs []LockHolder
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != id {
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

func held(hs []LockHolder, pid int) bool {
	for _, h := range hs {
		if h.Pid == pid {
			return true
		}
	}
	return false
}

// holderOf reads what /proc says of pid: its command line up to the first flag, and whether it
// is stopped.
func holderOf(pid int) LockHolder {
	h := LockHolder{Pid: pid}
	dir := filepath.Join("/proc", strconv.Itoa(pid))
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
