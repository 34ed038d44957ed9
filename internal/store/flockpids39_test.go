package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// /proc/locks read in pages can miss a held lock (a lock released in an earlier page while it
// is read shifts the held one across the page's end): flockPids reads again until a read after
// the first adds no holder, so one read missing the agent's lock does not make it gone
// (flake39: TestSupervisionOfAKilledAgentSaysItIsGone read an agent gone while it ran, 2 in 60).
func TestFlockPidsIsNotFooledByOneReadMissingTheHolder(t *testing.T) {
	t.Parallel()
	path, _, id := lockFileID(t, "agent.lock")
	other := "1: POSIX  ADVISORY  WRITE 77 00:1f:12 0 EOF\n2: FLOCK  ADVISORY  WRITE 78 00:1f:13 0 EOF\n"
	held := other + "3: FLOCK  ADVISORY  WRITE 4242 " + id + " 0 EOF\n3: -> FLOCK  ADVISORY  WRITE 4343 " + id + " 0 EOF\n"
	holder := func(pids ...int) string {
		s := other
		for _, p := range pids {
			s += fmt.Sprintf("9: FLOCK  ADVISORY  WRITE %d %s 0 EOF\n", p, id)
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		reads []string
		want  []int
		read  int
	}{
		{"held, the first read missing it", []string{other, held, held}, []int{4242}, 3},
		{"held, every read seeing it", []string{held, held}, []int{4242}, 2},
		{"held by none", []string{other, other}, nil, 2},
		{"a new holder at every read, bounded", []string{holder(1), holder(1, 2), holder(1, 2, 3), holder(1, 2, 3, 4)}, []int{1, 2, 3, 4}, procLocksReads},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			pids, ok, err := flockPids(path, func() ([]byte, error) {
				if n >= len(tc.reads) {
					t.Fatalf("read %d of /proc/locks, %d expected", n+1, len(tc.reads))
				}
				n++
				return []byte(tc.reads[n-1]), nil
			})
			if err != nil || !ok {
				t.Fatalf("flockPids: ok %v, err %v", ok, err)
			}
			if !slices.Equal(pids, tc.want) || n != tc.read {
				t.Errorf("holders %v after %d reads; want %v after %d", pids, n, tc.want, tc.read)
			}
		})
	}
}

// The holders an error names (a state dir's path lock, the open lock, the write lock) come from
// /proc/locks read the same way: one read missing the holder's line does not make the error
// name nobody (CI at eeb5dd2f: TestThePathLockHeldTooLongRefusesWritesNamingTheHolder's error
// named no pid, its one read of /proc/locks having missed flock(1)'s lock).
func TestLockHoldersAreNotFooledByOneReadMissingTheHolder(t *testing.T) {
	t.Parallel()
	_, fi, id := lockFileID(t, "volctl.path")
	other := "1: POSIX  ADVISORY  WRITE 77 00:1f:12 0 EOF\n"
	self := fmt.Sprintf("2: FLOCK  ADVISORY  WRITE %d %s 0 EOF\n", os.Getpid(), id)
	held := other + self + "3: FLOCK  ADVISORY  WRITE 4242 " + id + " 0 EOF\n3: -> FLOCK  ADVISORY  WRITE 4343 " + id + " 0 EOF\n"
	reads := []string{other + self, held, held}
	n := 0
	hs := lockHolders(fi, "", func() ([]byte, error) {
		if n >= len(reads) {
			t.Fatalf("read %d of /proc/locks, %d expected", n+1, len(reads))
		}
		n++
		return []byte(reads[n-1]), nil
	}, func(fields []string) bool { return fields[1] == "FLOCK" })
	if len(hs) != 1 || hs[0].Pid != 4242 || n != len(reads) {
		t.Errorf("holders %v after %d reads; want pid 4242 alone (not this process, not the waiter) after %d", hs, n, len(reads))
	}
}

// lockFileID makes an empty file named name in a new directory, and returns its path, its
// FileInfo and its ID as /proc/locks writes it (major:minor:inode, the numbers in hex).
func lockFileID(t *testing.T, name string) (path string, fi os.FileInfo, id string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return path, fi, fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
}
