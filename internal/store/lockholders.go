package store

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
	// Blocked is a thread of the process in uninterruptible sleep in the kernel (state D), nil
	// when none is: waiting on a file system or device that may never answer (a FUSE daemon
	// stopped or hung, a hard NFS mount whose server is gone), which no signal but SIGKILL (if
	// that) ends. Every thread is looked at: a Go process's first thread idles in a futex (S)
	// while another is the one blocked.
	Blocked *KernelSleep
}

// KernelSleep is a thread in uninterruptible sleep (state D in /proc/PID/task/TID/stat).
type KernelSleep struct {
	Tid int
	// Wchan is the kernel function it sleeps in ("fuse_get_req", "rpc_wait_bit_killable"), as
	// /proc/PID/task/TID/wchan says; "" when it does not.
	Wchan string
	// switches is the thread's context switches (voluntary and not) when it was seen: the same
	// at the next look, the thread has not run since, so it is in the same sleep, not one of
	// the short ones any disk I/O makes.
	switches string
}

// String is "pid 12: volctl volume claim db, stopped", or "pid 12: volctl volume claim db,
// blocked in the kernel (uninterruptible sleep in fuse_get_req)".
func (h LockHolder) String() string {
	s := "pid " + strconv.Itoa(h.Pid)
	if h.Command != "" {
		s += ": " + h.Command
	}
	switch {
	case h.Stopped:
		s += ", stopped"
	case h.Blocked != nil && h.Blocked.Wchan != "":
		s += ", blocked in the kernel (uninterruptible sleep in " + h.Blocked.Wchan + ")"
	case h.Blocked != nil:
		s += ", blocked in the kernel (uninterruptible sleep)"
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

// allStuck reports whether there are holders and every one is stuck: stopped by a signal, or
// blocked in the kernel in the same sleep as at the look before (prev), not having run since.
// Then nothing will let the lock go until someone resumes or ends them, or what they wait on
// answers.
func allStuck(prev, hs []LockHolder) bool {
	for _, h := range hs {
		if !h.Stopped && !sameSleep(prev, h) {
			return false
		}
	}
	return len(hs) > 0
}

// sameSleep reports whether h is blocked in the kernel in the very sleep prev saw it in.
func sameSleep(prev []LockHolder, h LockHolder) bool {
	if h.Blocked == nil {
		return false
	}
	for _, p := range prev {
		if p.Pid == h.Pid {
			return p.Blocked != nil && h.Blocked.switches != "" && *p.Blocked == *h.Blocked
		}
	}
	return false
}

// FlockHolders lists the processes other than this one holding a flock on the file fi is the
// FileInfo of, as /proc/locks lists them (at most shownNames); nil when none can be named (no
// /proc, or a holder in another PID namespace).
//
// dir is the directory the file is in ("" when not known). On an overlay file system whose
// layers are on other file systems (a container's root: its image on one, its writable layer on
// another), stat gives a file its layer's device while /proc/locks names its lock by the
// overlay's own, which the directory shows: a lock of the file's inode number on that device is
// the file's. Matched by stat's device alone, every wait there named nobody and never gave up on
// a stopped holder (TestLockWaitOnATwoLayerOverlayStateDirNamesAndGivesUpOnAStoppedHolder).
func FlockHolders(fi fs.FileInfo, dir string) []LockHolder {
	return lockHolders(fi, dir, readProcLocks, func(fields []string) bool { return fields[1] == "FLOCK" })
}

// overlayLockID is how /proc/locks names the file st is of when it is on an overlay file system
// whose layers are on other file systems (dir, its directory, shows the overlay's device, and
// the file another): the overlay's device and the file's inode number; "" otherwise.
func overlayLockID(st *syscall.Stat_t, dir string) string {
	if dir == "" {
		return ""
	}
	var dst unix.Stat_t
	if unix.Stat(dir, &dst) != nil || dst.Dev == st.Dev {
		return ""
	}
	var sfs unix.Statfs_t
	if unix.Statfs(dir, &sfs) != nil || sfs.Type != unix.OVERLAYFS_SUPER_MAGIC {
		return ""
	}
	return fmt.Sprintf("%02x:%02x:%d", unix.Major(dst.Dev), unix.Minor(dst.Dev), st.Ino)
}

// FlockPids lists every process holding a flock on the file at path, this one included, as
// /proc/locks lists them: 0 for a holder in a PID namespace this process cannot see into. err
// is stat's (fs.ErrNotExist: no such file). ok is false when nothing is known: /proc/locks
// cannot be read, or the file is on an overlay file system whose layers are on other file
// systems, where /proc/locks names a lock by the layer's device, not the one stat says (a
// container's state dir): a FLOCK line with the file's inode number on another device there
// may be its lock, and none found is no word that none holds it (recheck39b; before, every
// agent's record on such a file system read gone while the agent ran).
func FlockPids(path string) (pids []int, ok bool, err error) {
	return flockPids(path, readProcLocks)
}

// readProcLocks reads /proc/locks whole.
func readProcLocks() ([]byte, error) { return os.ReadFile("/proc/locks") }

// procLocksReads bounds how often lockPids reads /proc/locks for one answer.
const procLocksReads = 4

// lockPids lists, once each, the pids of the lock holders' lines of /proc/locks (read through
// readLocks) that keep accepts: a line's fields, six or more ("1: FLOCK  ADVISORY  READ  1234
// 08:01:5678 0 EOF"; a waiter's line, with "->" after its number, holds nothing and is left
// out); 0 is a holder in a PID namespace this process cannot see into. The kernel serves
// /proc/locks a page per read(2), each read resuming at a line count: a lock released
// meanwhile in an earlier page shifts the lines after it back by one, and the line that
// crosses the page's end is in neither page, a lock that is held read as none (flake39: 1 in
// 3,000 reads of a lock held while other processes took and dropped theirs; an agent then
// shown gone while it ran; and in CI, a state dir's path lock read as held by nobody named).
// A held lock is in every whole read, a dropped one in none after its drop, so the holders are
// the union of reads repeated until one after the first adds no holder (at most
// procLocksReads): a lock missed twice running needs two releases, each at a page's end at the
// moment of its read; a holder that drops its lock between the reads is named, as it would
// have been a moment sooner.
func lockPids(readLocks func() ([]byte, error), keep func(fields []string) bool) ([]int, error) {
	var pids []int
	for i := range procLocksReads {
		b, err := readLocks()
		if err != nil {
			return nil, err
		}
		added := false
		for line := range strings.Lines(string(b)) {
			fields := strings.Fields(line)
			if len(fields) < 6 || fields[1] == "->" || !keep(fields) {
				continue
			}
			pid, err := strconv.Atoi(fields[4])
			if err != nil || pid < 0 || slices.Contains(pids, pid) {
				continue
			}
			pids, added = append(pids, pid), true
		}
		if !added && i > 0 {
			break
		}
	}
	return pids, nil
}

// procLocksID is how /proc/locks names the file st is of: its device's major and minor
// number in hex, and its inode number ("08:01:5678").
func procLocksID(st *syscall.Stat_t) string {
	return fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
}

// flockPids is FlockPids reading /proc/locks through readLocks.
func flockPids(path string, readLocks func() ([]byte, error)) (pids []int, ok bool, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false, err
	}
	st, isStat := fi.Sys().(*syscall.Stat_t)
	if !isStat {
		return nil, false, nil
	}
	id := procLocksID(st)
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	elsewhere := false // a FLOCK line of the inode number on another device
	pids, err = lockPids(readLocks, func(fields []string) bool {
		if fields[1] != "FLOCK" {
			return false
		}
		if fields[5] != id {
			elsewhere = elsewhere || strings.HasSuffix(fields[5], ino)
			return false
		}
		return true
	})
	if err != nil {
		return nil, false, nil
	}
	if len(pids) == 0 && elsewhere {
		var sfs unix.Statfs_t
		if unix.Statfs(path, &sfs) != nil || sfs.Type == unix.OVERLAYFS_SUPER_MAGIC {
			return nil, false, nil
		}
	}
	return pids, true, nil
}

// walWriteLock is the byte of the -shm file whose POSIX write lock is SQLite's WAL write lock
// (UNIX_SHM_BASE 120 + WAL_WRITE_LOCK 0).
const walWriteLock = 120

// writeLockHolders lists the processes other than this one holding the state database's write
// lock: a POSIX (or open file description) write lock over byte walWriteLock of its -shm file.
func (s *Store) writeLockHolders() []LockHolder {
	return s.shmLockHolders(walWriteLock, "WRITE")
}

// openers lists the processes other than this one that have the state database open, as
// SQLite's lock on the -shm's dead-man byte shows them (any process with it open holds one),
// while holding open a lock file of this database's that is no longer at its path (/proc's link
// to it "volctl.db-lock (deleted)"): a volctl whose open lock's file was removed or replaced
// while it ran, whose shared flock is on a file no one else opens. A process with the file at
// the path open holds the lock or waits for it, which the lock itself orders; another SQLite
// client (a sqlite3 shell) writes with no volctl statements, and is not waited for. Read from
// /proc, never by opening the -shm: closing a file of its own drops every POSIX lock this
// process's SQLite holds on it.
//
// The lock file is this state dir's: /proc names it by the path the holder's mount namespace
// reaches it by, never the path this Open was given; compared with that, a state dir reached
// through a symlink found no one
// (TestMigrationThroughASymlinkedStateDirDoesNotRunUnderAnOlderVolctlWhoseOpenLockFileWasRemoved).
// Compared by its base name alone, a process holding this database open beside another state
// dir's removed lock file (a test binary, a tool with two states open) was taken for one holding
// this one's, and the migration refused for good (TestMigrationIsNotRefusedForAnotherStateDirsRemovedLockFile).
//
// So the removed file's directory, as /proc names it, is looked up under the holder's own root
// (/proc/PID/root: its mount namespace), and must be this state dir: a bind mount of the state
// dir, or a container's path to it, names it otherwise
// (TestMigrationDoesNotRunUnderAnOlderVolctlThatOpenedTheStateDirThroughABindMount).
func (s *Store) openers() []LockHolder {
	here, err := os.Stat(filepath.Dir(s.lock.Name()))
	if err != nil {
		return nil
	}
	var out []LockHolder
	for _, h := range s.shmLockHolders(shmDMSOffset, "") {
		if holdsRemovedIn(h.Pid, filepath.Base(s.lock.Name()), here) {
			out = append(out, h)
		}
	}
	return out
}

// holdsRemovedIn says whether process pid has a file named base open that was removed from its
// path ("/dir/base (deleted)" to /proc), dir being, under the process's root, the directory dir
// is (readlink and stat through /proc; false when they cannot be read: another user's, under
// hidepid).
func holdsRemovedIn(pid int, base string, dir os.FileInfo) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	ents, err := os.ReadDir(proc + "/fd")
	if err != nil {
		return false
	}
	suffix := "/" + base + " (deleted)"
	for _, e := range ents {
		l, err := os.Readlink(proc + "/fd/" + e.Name())
		if err != nil || !strings.HasSuffix(l, suffix) {
			continue
		}
		if fi, err := os.Stat(proc + "/root" + strings.TrimSuffix(l, suffix)); err == nil && os.SameFile(fi, dir) {
			return true
		}
	}
	return false
}

// shmLockHolders lists the processes other than this one holding a POSIX (or open file
// description) lock over byte b of the database's -shm file: a write lock when kind is
// "WRITE", any lock when it is "".
func (s *Store) shmLockHolders(b int64, kind string) []LockHolder {
	fi, err := os.Stat(s.path + "-shm")
	if err != nil {
		return nil
	}
	return lockHolders(fi, filepath.Dir(s.path), readProcLocks, func(fields []string) bool {
		if (fields[1] != "POSIX" && fields[1] != "OFDLCK") || (kind != "" && fields[3] != kind) || len(fields) < 8 {
			return false
		}
		start, err := strconv.ParseInt(fields[6], 10, 64)
		if err != nil || start > b {
			return false
		}
		end, err := strconv.ParseInt(fields[7], 10, 64)
		return fields[7] == "EOF" || (err == nil && end >= b)
	})
}

// lockHolders lists the processes other than this one holding a lock on the file fi is the
// FileInfo of (in directory dir: FlockHolders) that match says is the one waited for, as
// /proc/locks (read through readLocks, as lockPids does) lists them (at most shownNames).
func lockHolders(fi fs.FileInfo, dir string, readLocks func() ([]byte, error), match func(fields []string) bool) []LockHolder {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	id, overlaid := procLocksID(st), overlayLockID(st, dir)
	self := os.Getpid()
	pids, err := lockPids(readLocks, func(fields []string) bool { return fields[5] == id && match(fields) })
	if err != nil {
		return nil
	}
	if overlaid != "" {
		// The overlay's device and an inode number name the lock file, or a file of another
		// layer whose file system gave it the same number (each numbers its own: a fresh tmpfs
		// from 1): a holder found so is named only if it has the lock file open, where stat
		// says what it is. Named by number alone, an unrelated process locking an image file
		// was named, stopped, and the wait gave up blaming it
		// (TestLockWaitOnATwoLayerOverlayDoesNotNameAProcessLockingAnImageFileOfTheSameInodeNumber).
		more, err := lockPids(readLocks, func(fields []string) bool { return fields[5] == overlaid && match(fields) })
		if err != nil {
			return nil
		}
		for _, pid := range more {
			if pid > 0 && !slices.Contains(pids, pid) && hasOpen(pid, st) {
				pids = append(pids, pid)
			}
		}
	}
	var hs []LockHolder
	for _, pid := range pids {
		if pid > 0 && pid != self && len(hs) < shownNames {
			hs = append(hs, holderOf(pid))
		}
	}
	return hs
}

// hasOpen says whether process pid has the file st is of open, by its descriptors as /proc
// gives them (false when they cannot be read: another user's, under hidepid).
func hasOpen(pid int, st *syscall.Stat_t) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		var fst unix.Stat_t
		if unix.Stat(dir+"/"+e.Name(), &fst) == nil && fst.Dev == st.Dev && fst.Ino == st.Ino {
			return true
		}
	}
	return false
}

// StuckHolders says that holders, all stuck for d (stopped by a signal, or blocked in the
// kernel), keep a lock, and what to do: "held by pid 12: volctl volume claim db, stopped by a
// signal (^Z or SIGSTOP) for 10s, ...".
func StuckHolders(holders []LockHolder, d time.Duration) string {
	pids := make([]string, len(holders))
	blocked, stopped := false, false
	for i, h := range holders {
		pids[i] = strconv.Itoa(h.Pid)
		blocked = blocked || !h.Stopped
		stopped = stopped || h.Stopped
	}
	list := strings.Join(pids, " ")
	if !blocked {
		return fmt.Sprintf("held by %s by a signal (^Z or SIGSTOP) for %s, which keeps it until resumed or ended: "+
			"resume it (`kill -CONT %s`, or `fg` in its shell) or end it (`kill %s; kill -CONT %s`: a stopped volctl takes the SIGTERM once resumed; `volctl reconcile` then finishes what it left half-done), and run this again",
			LockHolders(holders), d.Round(time.Second), list, list, list)
	}
	resume := ""
	if stopped {
		resume = ", resume one stopped (`kill -CONT`)"
	}
	return fmt.Sprintf("held by %s for %s, which keeps it until what it waits on answers (a file system or device that does not: "+
		"a FUSE daemon stopped or hung, an NFS server gone): bring that back%s, or end it (`kill -KILL %s`; `volctl reconcile` then finishes what it left half-done), and run this again",
		LockHolders(holders), d.Round(time.Second), resume, list)
}

// stuckOpenHolders is StuckHolders for the open lock a migration takes exclusive: every other
// volctl holds it shared for as long as it runs, so one resumed keeps it, and the migration
// waits again; a stuck holder must end. Before, resuming was advised, and followed, refused
// again (TestMigrationBehindAStoppedVolctlAdvisesNoResumeThatKeepsTheLock).
func stuckOpenHolders(holders []LockHolder, d time.Duration) string {
	pids := make([]string, len(holders))
	stopped := true
	for i, h := range holders {
		pids[i] = strconv.Itoa(h.Pid)
		stopped = stopped && h.Stopped
	}
	list := strings.Join(pids, " ")
	if stopped {
		return fmt.Sprintf("held by %s by a signal (^Z or SIGSTOP) for %s; a volctl holds it for as long as it runs, so resumed it keeps it: "+
			"end it (`kill %s; kill -CONT %s`: it takes the SIGTERM once resumed; or `fg` in its shell and quit it; `volctl reconcile` then finishes what it left half-done), and run this again",
			LockHolders(holders), d.Round(time.Second), list, list)
	}
	return fmt.Sprintf("held by %s for %s, stuck (stopped by a signal, or blocked in the kernel on a file system or device that does not answer); a volctl holds it for as long as it runs: "+
		"end it (`kill -KILL %s; kill -CONT %s`; `volctl reconcile` then finishes what it left half-done), and run this again",
		LockHolders(holders), d.Round(time.Second), list, list)
}

// HolderWatch follows who holds a lock a process waits for, looking every holderCheck: a wait
// says who, and gives up once every holder has been stuck for a while, stopped by a signal or
// blocked in the kernel (the engine's volume and controller locks, the state database's write
// lock).
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
// been stuck (0 when one runs, or none is known). A holder blocked in the kernel counts from
// the second look that finds it in the same sleep: the first may catch a short one.
func (w *HolderWatch) Look(now time.Time) time.Duration {
	if now.Sub(w.looked) >= holderCheck {
		prev := w.last
		w.looked, w.last = now, w.holders()
		switch {
		case !allStuck(prev, w.last):
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
	if !h.Stopped {
		h.Blocked = kernelSleep(pid)
	}
	return h
}

// kernelSleep is a thread of pid in uninterruptible sleep (state D), nil when none is or /proc
// does not say.
func kernelSleep(pid int) *KernelSleep {
	task := filepath.Join("/proc", strconv.Itoa(pid), "task")
	entries, err := os.ReadDir(task)
	if err != nil {
		return nil
	}
	for _, en := range entries {
		dir := filepath.Join(task, en.Name())
		if f, err := procfs.StatFields(filepath.Join(dir, "stat")); err != nil || len(f) == 0 || f[0] != "D" {
			continue
		}
		tid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		k := &KernelSleep{Tid: tid, switches: contextSwitches(filepath.Join(dir, "status"))}
		if b, err := os.ReadFile(filepath.Join(dir, "wchan")); err == nil && string(b) != "0" {
			k.Wchan = strings.TrimSpace(string(b))
		}
		return k
	}
	return nil
}

// contextSwitches is what a /proc status file says of its thread's context switches
// ("voluntary_ctxt_switches: 12 nonvoluntary_ctxt_switches: 3"), "" when it cannot be read.
func contextSwitches(status string) string {
	b, err := os.ReadFile(status)
	if err != nil {
		return ""
	}
	var counts []string
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, "ctxt_switches:") {
			counts = append(counts, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(counts, " ")
}
