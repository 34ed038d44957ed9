package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/shellquote"
)

// A volctl command leaves its commits in the WAL (CloseAtExit), and so does a running agent
// until a checkpoint copies them into volctl.db: the WAL holds the state's latest commits, which
// volctl.db does not have yet. A WAL removed or truncated (by hand, by a cleanup of the state
// dir) takes them away, and SQLite, finding none, opened volctl.db as it was at the last
// checkpoint, every claim and staging recorded since forgotten without a word (their mounts left
// for reconcile to report); one removed under a process that has it open made every other
// command fail with a "disk I/O error" that sent the reader to the disk. SQLite's index of the
// WAL, volctl.db-shm, says how many frames the WAL held and how many of them the file has
// (the WAL-index header and its checkpoint info, https://www.sqlite.org/walformat.html), so
// checkWALGone tells such a loss before SQLite opens the files.

// walIndexVersion is the WAL-index header's iVersion.
const walIndexVersion = 3007000

// shmDMSOffset is the byte of volctl.db-shm that every process with the database open holds a
// shared lock on (SQLite's unix VFS: its "dead man switch").
const shmDMSOffset = 128

// checkWALGone refuses a database whose WAL is gone or empty while its -shm says the WAL held
// commits the file does not have: naming the process that still has them when one has the
// database open, else saying they are lost and what to do. sizes are what checkFiles found;
// blank says the file holds no state (identify), whose loss, with no process to stop,
// prepareFile's lost-database checks word (a state dir's whole state, not its latest commits).
func checkWALGone(path string, sizes map[string]int64, blank bool) error {
	shm, ok := sizes[path+"-shm"]
	if sizes[path] == 0 || sizes[path+"-wal"] > walHeaderSize || !ok || shm < 136 {
		return nil
	}
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil // gone meanwhile, or unreadable: SQLite says what is wrong
	}
	defer f.Close()
	hdr := make([]byte, 136)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil
	}
	le := binary.NativeEndian // the WAL-index is in the host's byte order
	// Both copies of the header alike and initialised: one a writer was not changing.
	if string(hdr[:48]) != string(hdr[48:96]) || le.Uint32(hdr[0:4]) != walIndexVersion || hdr[12] != 1 {
		return nil
	}
	frames, backfilled := le.Uint32(hdr[16:20]), le.Uint32(hdr[96:100])
	if frames <= backfilled {
		return nil // the file has every frame: nothing is lost with the WAL
	}
	wal, shmPath := path+"-wal", path+"-shm"
	// Looked at again after the index: a live writer writes a commit's frames to the WAL before
	// the index says it has them, so a WAL made meanwhile (the first commit after a clean close
	// removed the last one) holds them by now.
	if fi, err := os.Stat(wal); err == nil && fi.Size() > walHeaderSize {
		return nil
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: shmDMSOffset, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err == nil && lk.Type != unix.F_UNLCK {
		if walFD, ok := readOnlyHolder(int(lk.Pid), shmPath); ok {
			// A process reading through a read-only path (a dashboard on a read-only bind) holds
			// them: its exit writes nothing, and "stop it cleanly, which writes them" lost them
			// (TestWALRemovedUnderAReaderOnAReadOnlyBindIsNotSaidToBeKeptByItsExit). The WAL it
			// holds open is copied back first.
			return fmt.Errorf("open state: the write-ahead log %s was removed or emptied while process %d has the state database open: "+
				"the %d frames of commits %s says it held, not yet in %s, are in the removed log that process holds open, and it reads the state through a read-only path, "+
				"so its exit writes nothing into %s: stopping it first loses them; while it runs, copy the log back (`%s`), leave %s as it is, "+
				"then stop that process and run the command again",
				wal, lk.Pid, frames-backfilled, shmPath, FileName, FileName, shellquote.Command("cp", walFD, wal), shmPath)
		}
		return fmt.Errorf("open state: the write-ahead log %s was removed or emptied while process %d has the state database open: "+
			"the %d frames of commits %s says it held, not yet in %s, are in that process alone; leave %s and %s as they are, "+
			"stop that process cleanly (the agent: stop its service, or SIGTERM), which writes them into %s as it exits, then run the command again",
			wal, lk.Pid, frames-backfilled, shmPath, FileName, FileName, shmPath, FileName)
	}
	if blank {
		return nil
	}
	return &walGoneError{wal: wal, shm: shmPath, frames: frames - backfilled}
}

// readOnlyHolder reports whether process pid holds the WAL index at shmPath open read-only
// only (it reads the state through a read-only path: its exit can checkpoint nothing), and
// walFD, the /proc path of the removed write-ahead log it holds open, to copy back. false
// when that cannot be told (another user's process, no /proc).
func readOnlyHolder(pid int, shmPath string) (walFD string, ok bool) {
	shm, err := os.Stat(shmPath)
	if err != nil {
		return "", false
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return "", false
	}
	holds := false
	var wals []string // its removed logs' fds and the paths they were at
	shmAt := ""       // where it has this -shm open, in its own view (a read-only bind's path)
	for _, e := range ents {
		p := filepath.Join(fdDir, e.Name())
		target, _ := os.Readlink(p)
		if strings.HasSuffix(target, "/"+FileName+"-wal (deleted)") {
			wals = append(wals, p, strings.TrimSuffix(target, " (deleted)"))
		}
		fi, err := os.Stat(p)
		if err != nil || !os.SameFile(fi, shm) {
			continue
		}
		shmAt = target
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, e.Name()))
		if err != nil {
			return "", false
		}
		flags, found := "", false
		for line := range strings.SplitSeq(string(info), "\n") {
			if v, has := strings.CutPrefix(line, "flags:"); has {
				flags, found = strings.TrimSpace(v), true
			}
		}
		mode, perr := strconv.ParseUint(flags, 8, 32)
		if !found || perr != nil || mode&unix.O_ACCMODE != unix.O_RDONLY {
			return "", false // it may write: its exit checkpoints
		}
		holds = true
	}
	// The log of this state, beside its -shm: a process with another state open holds that
	// one's removed log too.
	for i := 0; i+1 < len(wals); i += 2 {
		if shmAt != "" && wals[i+1] == strings.TrimSuffix(shmAt, "-shm")+"-wal" {
			walFD = wals[i]
		}
	}
	return walFD, holds && walFD != ""
}

// walGoneError is checkWALGone's refusal of a state whose WAL is gone or empty while its index
// says it held commits not in the database file.
type walGoneError struct {
	wal, shm string
	frames   uint32
}

func (e *walGoneError) lost() string {
	return fmt.Sprintf("the write-ahead log %s is gone or empty, but %s, SQLite's index of it, says it held %d frames of commits not yet in %s: "+
		"they were lost with it (removed by hand or by a cleanup of the state dir: volctl leaves its latest commits there), and opening %s would go on "+
		"with the state as of its last checkpoint, what was recorded since forgotten",
		e.wal, e.shm, e.frames, FileName, FileName)
}

func (e *walGoneError) Error() string {
	return fmt.Sprintf("open state: %s; restore %s with its -wal and -shm from a backup, "+
		"or, to go on with that older state, remove %s and run `volctl reconcile`, which reports what is mounted that it no longer records",
		e.lost(), FileName, e.shm)
}

// readOnly is the refusal on a read-only file system, where nothing can be removed nor
// reconciled: the remedy is made where the state can be written.
func (e *walGoneError) readOnly() string {
	return fmt.Sprintf("%s; this state dir cannot be written here, so the remedy is made where it can be: on the writable state dir it shows (volctl's own, where its commands run), "+
		"or on this one once its file system is writable again (one the kernel made read-only after an error: repair it first, see dmesg): "+
		"restore %s there with its -wal and -shm from a backup, or, to go on with that older state, remove %s there and run `volctl reconcile`, which reports what is mounted that it no longer records",
		e.lost(), FileName, FileName+"-shm")
}

// checkSHMGone refuses to open the database at path when its WAL is there but its WAL index,
// volctl.db-shm, is not, while another process holds the open lock (lock, not held by this one
// yet): the -shm removed under a process that has the state open (a cleanup of the state dir).
// SQLite here would make a new one, and the two processes, no longer sharing the index nor the
// locks in it, would each append commits to the WAL over the other's: what one of them
// committed, and said was done, was lost (TestSHMRemovedUnderALiveProcessIsRefused). A -shm
// missing with no other process (a backup of the file and its WAL restored) is SQLite's to
// rebuild from the WAL. sizes are what checkFiles found.
func checkSHMGone(path string, sizes map[string]int64, lock *os.File) error {
	if _, wal := sizes[path+"-wal"]; !wal {
		return nil
	}
	if _, shm := sizes[path+"-shm"]; shm {
		return nil
	}
	fi, err := lock.Stat()
	if err != nil {
		return nil
	}
	// The last process to close the database removes the -shm, then the WAL (SQLite's close),
	// its open lock still held for that moment: a command opening then found the WAL without
	// its -shm beside a holder and was refused, telling the user to stop a process that was
	// stopping (TestOpenWhileTheLastProcessClosesIsNotRefused; TestMultiProcessWriters, under
	// load). Looked at again for a while: that close ends with the WAL gone and the lock let go,
	// where a -shm removed under a live process stays so.
	var hs []LockHolder
	for waited := time.Duration(0); ; waited += shmGonePoll {
		if _, err := os.Stat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if _, err := os.Stat(path + "-shm"); err == nil {
			return nil
		}
		if hs = FlockHolders(fi, filepath.Dir(path)); len(hs) == 0 {
			return nil
		}
		if waited >= shmGoneWait {
			break
		}
		time.Sleep(shmGonePoll)
	}
	verb := "has"
	if len(hs) > 1 {
		verb = "have"
	}
	return fmt.Errorf("open state: %s-shm, SQLite's index of the write-ahead log, was removed while %s %s the state database open: "+
		"opened now, SQLite would make another, and the two processes' commits would overwrite each other's in the log; leave %s and %s-wal as they are, "+
		"stop that process cleanly (the agent: stop its service, or SIGTERM), which writes its commits into %s as it exits, then run the command again",
		path, LockHolders(hs), verb, FileName, FileName, FileName)
}

// shmGoneWait bounds how long checkSHMGone waits for a process closing the database to finish
// its close, polled every shmGonePoll.
const (
	shmGoneWait = 2 * time.Second
	shmGonePoll = 10 * time.Millisecond
)

// walRemoved reports whether the WAL of the database at path is gone from its path, while this
// process may have it open.
func walRemoved(path string) bool {
	_, err := os.Stat(path + "-wal")
	return errors.Is(err, fs.ErrNotExist)
}
