package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A plugin's log past its bound on a state dir whose file system is full (the flood outran the
// checks, or something else filled it): the rotation cannot copy the newest output to .log.1,
// and before, it gave up there, the log left as large as it was, so the space it held, which
// the rotation exists to give back, stayed taken: every command failed with the disk full
// until someone removed the log by hand. The log is emptied all the same, with a line saying
// how much output was dropped and why, no partial .log.1 is left, and the error names the
// file that could not be written.
func TestTrimLogOnAFullDiskGivesTheSpaceBack(t *testing.T) {
	mnt := hostpathtest.Tmpfs(t, fmt.Sprintf("size=%dk", 2*maxLogSize>>10)) // the log past its bound, and room for little more
	path := filepath.Join(mnt, "p.log")
	line := strings.Repeat("x", 1023) + "\n"
	if err := os.WriteFile(path, bytes.Repeat([]byte(line), int(maxLogSize+maxLogSize/8)/len(line)), 0o600); err != nil {
		t.Fatal(err)
	}
	hostpathtest.Fill(t, filepath.Join(mnt, "fill"))
	err := trimLog(path)
	if err == nil {
		t.Fatalf("trimLog on a full file system succeeded; want an error naming %s.1", path)
	}
	for _, want := range []string{path + ".1", "no space left on device"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to say %q", err, want)
		}
	}
	st, serr := os.Stat(path)
	if serr != nil {
		t.Fatal(serr)
	}
	if st.Size() > 4096 {
		t.Fatalf("the log holds %d bytes after its rotation failed on a full disk; want it emptied, its space given back", st.Size())
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "bytes of output dropped") || !strings.Contains(string(b), "no space left on device") {
		t.Errorf("the emptied log says %q; want it to say how much output was dropped and why", b)
	}
	if _, err := os.Stat(path + ".1"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s.1 after a rotation that could not write it: %v; want none (no partial copy)", path, err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(mnt, &fs); err != nil {
		t.Fatal(err)
	}
	if free := int64(fs.Bavail) * fs.Bsize; free < maxLogSize {
		t.Errorf("%d bytes free on %s after the rotation; want the log's %d given back", free, mnt, maxLogSize)
	}
}

// A rotation that cannot write .log.1 for another reason than a full disk (its directory gone
// under a cleanup, the agent out of file descriptors for a moment) keeps the log as it is and
// says why: it was emptied as on a full disk, the plugin's output thrown away where keeping
// it cost nothing, the next check rotating it once the cause is gone.
func TestTrimLogKeepsTheLogWhenOnlyItsRotationFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.log")
	line := strings.Repeat("x", 1023) + "\n"
	if err := os.WriteFile(path, bytes.Repeat([]byte(line), int(maxLogSize+maxLogSize/8)/len(line)), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	src, err := openStateFile(path, os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rotated := filepath.Join(t.TempDir(), "gone", "p.log.1")
	if err := trimOpen(src, rotated); err == nil || !strings.Contains(err.Error(), rotated) {
		t.Errorf("trimOpen to %s, whose directory is gone: %v; want an error naming it", rotated, err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != before.Size() {
		t.Errorf("the log after a rotation that could not open %s: %v bytes (%v), want its %d kept", rotated, st.Size(), err, before.Size())
	}
}
