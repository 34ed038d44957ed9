package store

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWALCopyBackAdviceWorksPastedInAStateDirWithABlank: the state dir is "/…/state dir" (a
// blank inside a path is allowed: only blanks at its ends, control characters, "~" and "-" are
// refused). A dashboard reads it through a read-only bind, the agent stops beside it (its
// commits left in volctl.db-wal), and a cleanup removes the WAL. The next open is refused by
// checkWALGone's read-only-holder branch (walgone.go), which advises copying the log the reader
// holds open back first: "(`cp /proc/PID/fd/N /…/state dir/volctl.db-wal`)". The paths are
// written raw into the command, not shell-quoted as every other command volctl advises is
// (shellquote): pasted, the shell splits the destination at its blank, cp fails ("target
// 'dir/volctl.db-wal' is not a directory"), and the commits the refusal means to save are lost
// once the reader is stopped as the same advice says next. A state dir holding a shell's
// `$(...)`, `;` or a quote runs something else. Correct: the command's paths are quoted
// (shellquote.Arg), so that the advice, pasted into a shell, copies the log back.
// Found by helper review82 (secrets).
func TestWALCopyBackAdviceWorksPastedInAStateDirWithABlank(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state dir")
	reader, stdin, wal, err := walRemovedUnderAReadOnlyReader(t, dir)
	refusal := err.Error()
	pid := fmt.Sprint(reader.Process.Pid)
	i := strings.Index(refusal, "`cp /proc/"+pid+"/fd/")
	if i < 0 {
		t.Fatalf("precondition: the refusal is the read-only holder's, advising to copy the log back from pid %s:\n%s", pid, refusal)
	}
	end := strings.Index(refusal[i+1:], "`")
	if end < 0 {
		t.Fatalf("precondition: the advised command is closed by a backtick:\n%s", refusal)
	}
	command := refusal[i+1 : i+1+end]
	// Pasted into a shell, as advice is.
	var stderr bytes.Buffer
	sh := exec.Command("/bin/sh", "-c", command)
	sh.Stderr = &stderr
	runErr := sh.Run()
	fi, statErr := os.Stat(wal)
	if runErr != nil || statErr != nil || fi.Size() <= walHeaderSize {
		t.Fatalf("the refusal advises `%s`; pasted into a shell it failed (%v: %s) and the log is not back at %s (%v): "+
			"the paths are not shell-quoted, and the commits it means to save are lost once the reader is stopped as advised\nrefusal: %s",
			command, runErr, strings.TrimSpace(stderr.String()), wal, statErr, refusal)
	}
	stdin.Close()
	if err := reader.Wait(); err != nil {
		t.Fatalf("the reader's clean exit: %v", err)
	}
	if got := volumeIDs(t, dir); strings.Join(got, ",") != "after-checkpoint,db" {
		t.Errorf("volumes once the advice was followed: %v; want after-checkpoint and db", got)
	}
}
