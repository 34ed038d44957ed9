package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyViewStraddledByAnotherVolctlIsNotCalledDamaged: a dashboard (or `events`,
// `export`, `status`) on a read-only bind of a live state dir that no volctl had open reads the
// database immutable (readonly.go): no locks, and a page cache SQLite never checks again.
// readPool looks for a WAL, or a changed file, at the start of each View only; a volctl command
// run through the writable path meanwhile (open: a WAL made; commits; close: checkpointed into
// volctl.db, the WAL removed) within one View changes the file under that View's reads. The
// View then mixed pages of two states: its second read failed with "database disk image is
// malformed (11)", which the store words as "volctl cannot read it as its state: a damaged
// file ... restore a backup of the three" — nothing is damaged, and the advice followed throws
// away every commit since the backup; a read that does not fail reads a mix (a count of 0
// beside a list of 201). View promises a consistent snapshot. Correct: a View of an immutable
// store whose file changed while it read (the stamp readPool took, looked at again when the
// transaction ends or fails) is run again on the file as it is now, or fails saying the state
// changed while it was read and to run again, never calling it damaged. Found by helper
// review82 (readonly).
// Found by helper review82 (readonly).
func TestReadOnlyViewStraddledByAnotherVolctlIsNotCalledDamaged(t *testing.T) {
	ctx := context.Background()
	live := t.TempDir()
	w := openAndAppend(t, live, "first")
	for i := range 200 {
		update(t, w, func(tx *Tx) error {
			return tx.Events().Append(&Event{Kind: fmt.Sprintf("before %d", i), Message: strings.Repeat("m", 200)})
		})
	}
	if err := w.Close(); err != nil { // checkpointed, the WAL removed: no volctl has it open
		t.Fatal(err)
	}
	ro := readOnlyBindOf(t, live)
	s, err := Open(ctx, ro)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.ro.immutable {
		t.Fatalf("precondition: the read-only bind of a state dir without a WAL was not opened immutable")
	}

	wrote := false
	var first, second, logged int
	err = s.View(ctx, func(tx *Tx) error {
		evs, err := tx.Events().Recent(0, EventFilter{})
		if err != nil {
			return err
		}
		first = len(evs)
		if !wrote {
			// Another volctl command, through the writable path, while this View reads.
			wrote = true
			w, err := Open(ctx, live)
			if err != nil {
				return fmt.Errorf("the other volctl's open: %w", err)
			}
			for i := range 300 {
				if err := w.Update(ctx, func(tx *Tx) error {
					return tx.Events().Append(&Event{Kind: fmt.Sprintf("during %d", i), Message: strings.Repeat("z", 300)})
				}); err != nil {
					w.Close()
					return fmt.Errorf("the other volctl's write: %w", err)
				}
			}
			if err := w.Close(); err != nil {
				return fmt.Errorf("the other volctl's close: %w", err)
			}
			if _, err := os.Stat(filepath.Join(live, FileName+"-wal")); err == nil {
				return errors.New("precondition: the other volctl's close left its WAL")
			}
		}
		if evs, err = tx.Events().Recent(0, EventFilter{}); err != nil {
			return err
		}
		second = len(evs)
		logged, err = tx.Events().Logged()
		return err
	})
	if err != nil && strings.Contains(err.Error(), "precondition") {
		t.Fatal(err)
	}
	if err != nil && (Unusable(err) || strings.Contains(err.Error(), "restore a backup") || strings.Contains(err.Error(), "malformed")) {
		t.Fatalf("a View on a read-only bind, while another volctl wrote and closed the state through the writable path: %v\n"+
			"want the state read (the View run again on the file as it is now) or a refusal saying it changed while read; "+
			"nothing is damaged, and restoring a backup would lose every commit since it", err)
	}
	if err == nil && (first != second || second != logged) {
		t.Errorf("one View on a read-only bind read %d events, then %d, and counted %d logged, while another volctl wrote and closed the state: "+
			"want one consistent snapshot", first, second, logged)
	}
}

// TestWALRemovedUnderAReaderOnAReadOnlyBindIsNotSaidToBeKeptByItsExit: the agent stops while a
// dashboard reads the state through a read-only bind (a monitoring container): the dashboard
// holds SQLite's locks, so the agent's close cannot checkpoint, and the latest commits stay in
// volctl.db-wal. A cleanup then removes the WAL. The next command is refused (checkWALGone),
// rightly, naming the dashboard's pid: "the N frames of commits ... are in that process alone;
// ... stop that process cleanly (the agent: stop its service, or SIGTERM), which writes them
// into volctl.db as it exits, then run the command again". Followed, the advice loses them: a
// process reading through a read-only path cannot write anything into volctl.db, its exit
// checkpoints nothing, and the command run again says the commits are lost (here the volume
// recorded since the checkpoint); while it ran, they could still have been copied from the WAL
// it holds open (/proc/PID/fd). Correct: the refusal tells a holder that only reads through a
// read-only path (its -shm open read-only) from one that can write, and says that stopping it
// keeps nothing and how to save the commits first; or, if it says stopping it keeps them, that
// holds. Found by helper review82 (readonly).
func TestWALRemovedUnderAReaderOnAReadOnlyBindIsNotSaidToBeKeptByItsExit(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	reader, stdin, wal, err := walRemovedUnderAReadOnlyReader(t, dir)
	pid := fmt.Sprint(reader.Process.Pid)
	if !strings.Contains(err.Error(), "process "+pid) {
		t.Fatalf("precondition: the refusal does not name the reader (pid %s): %v", pid, err)
	}
	refusal := err.Error()
	if !strings.Contains(refusal, "stop that process") || !strings.Contains(refusal, "writes them into "+FileName) {
		// The refusal no longer promises what the reader's exit cannot do: it says to copy the
		// log the reader holds open back first. Followed to the end: copied, then the reader
		// stopped, then the command run again keeps the WAL's commit.
		fd := "/proc/" + pid + "/fd/"
		i := strings.Index(refusal, "`cp "+fd)
		if i < 0 {
			t.Fatalf("the refusal says neither that the reader's exit keeps the commits nor how to copy them back from it:\n%s", refusal)
		}
		args := strings.Fields(strings.TrimPrefix(refusal[i:], "`cp "))
		src, dst := args[0], strings.TrimSuffix(args[1], "`),")
		if dst != wal {
			t.Fatalf("the refusal copies %s to %q, not the state's WAL %s:\n%s", src, dst, wal, refusal)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatalf("the refusal's copy from %s: %v", src, err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The advice followed: the named process stopped cleanly, the command run again.
	stdin.Close()
	if err := reader.Wait(); err != nil {
		t.Fatalf("the reader's clean exit: %v", err)
	}
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatalf("the refusal said:\n  %s\nFollowed (the read-only reader pid %s stopped cleanly), the state is refused:\n  %v\n"+
			"a process reading through a read-only path cannot write the WAL's commits into %s; the advice lost them",
			refusal, pid, err, FileName)
	}
	defer s.Close()
	var ids []string
	view(t, s, func(tx *Tx) error {
		vs, err := tx.Volumes().List(VolumeFilter{})
		for _, v := range vs {
			ids = append(ids, v.ID)
		}
		return err
	})
	if strings.Join(ids, ",") != "after-checkpoint,db" {
		t.Errorf("volumes once the reader named exited as advised: %v; want after-checkpoint and db, the WAL's commit kept", ids)
	}
}

// TestWALPairRefusedOnAReadOnlyFileSystemSaysWhereTheRemedyIsMade: a backup restored over
// volctl.db while its WAL stayed, read through a read-only bind (or a read-only snapshot of such
// a state dir), is refused (checkWALPair), rightly, but with the writable path's advice, naming
// the read-only path: "with every volctl stopped move <ro>/volctl.db-wal and <ro>/volctl.db-shm
// out of the state dir; to use the log's state, put back the volctl.db it was written beside".
// Followed there, every step fails with "read-only file system". openReadOnly
// (internal/store/readonly.go) words checkWALGone's refusal for a read-only dir
// (TestReadOnlyStateWhoseWALIsGoneIsNotToldToRemoveFilesThere) but passes checkWALPair's as it
// is. Correct: on a read-only file system the refusal matches ErrReadOnlyFS and says the files
// are moved where they can be (the writable state dir it shows, or a copy made somewhere
// writable), not at the read-only path. (TestOpenOnAReadOnlyFileSystemRefusesTheWALOfAnotherDatabase
// checks the writable path's words there through refusedPair, and would change with the fix.)
// Found by helper review82 (readonly).
func TestWALPairRefusedOnAReadOnlyFileSystemSaysWhereTheRemedyIsMade(t *testing.T) {
	ctx := context.Background()
	live := filepath.Join(t.TempDir(), "state")
	s, err := Open(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	commitVolumes(t, s, "backed-up", 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	backup := readFile(t, filepath.Join(live, FileName))
	if s, err = Open(ctx, live); err != nil {
		t.Fatal(err)
	}
	commitVolumes(t, s, "since", 3)
	s.checkpointNow()
	commitVolumes(t, s, "after", 2) // the WAL's commits start here
	defer closeLeftForExit(s)
	if err := s.CloseAtExit(); err != nil {
		t.Fatal(err)
	}
	// The state dir as it is once the backup was restored over volctl.db, its WAL left.
	dir := t.TempDir()
	copyStateFiles(t, live, dir, FileName+"-wal", FileName+"-shm")
	if err := os.WriteFile(filepath.Join(dir, FileName), backup, 0o600); err != nil {
		t.Fatal(err)
	}
	ro := readOnlyBindOf(t, dir)
	r, err := Open(ctx, ro)
	if err == nil {
		r.Close()
		t.Fatalf("precondition: a read-only bind of a backup restored under another WAL opened")
	}
	if !strings.Contains(err.Error(), "is not the one of the state database") {
		t.Fatalf("precondition: the read-only open's refusal is not checkWALPair's: %v", err)
	}
	roWAL := filepath.Join(ro, FileName+"-wal")
	mvErr := os.Rename(roWAL, roWAL+".aside")
	if strings.Contains(err.Error(), "move "+roWAL) || !errors.Is(err, ErrReadOnlyFS) {
		t.Errorf("Open of a read-only state dir whose WAL is not its database's: %v\n"+
			"want it to say the state dir is read-only (ErrReadOnlyFS) and where the files can be moved; "+
			"it says to move %s, which fails there: %v", err, roWAL, mvErr)
	}
}

// walRemovedUnderAReadOnlyReader is the state dir at dir after the agent stopped beside a
// reader in a process of its own on a read-only bind of it (its commit "after-checkpoint"
// left in the WAL the reader keeps), and a cleanup removed the WAL: the reader, its stdin
// (closed, it exits cleanly), the WAL's path, and the refusal of an open then.
func walRemovedUnderAReadOnlyReader(t *testing.T, dir string) (*exec.Cmd, io.Closer, string, error) {
	t.Helper()
	ctx := context.Background()
	w, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, w, func(tx *Tx) error { return tx.Volumes().Insert(&Volume{ID: "db", PluginID: "p", State: VolumeReady}) })
	if err := w.Close(); err != nil { // "db" checkpointed into volctl.db
		t.Fatal(err)
	}
	// The agent, running: it has the state open, and records a volume.
	if w, err = Open(ctx, dir); err != nil {
		t.Fatal(err)
	}
	update(t, w, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "after-checkpoint", PluginID: "p", State: VolumeReady})
	})
	// The dashboard on a read-only bind of the state dir, in a process of its own.
	reader, stdin := startWALRemovedChild(t, readOnlyBindOf(t, dir), "reader")
	// The agent stops; then a cleanup removes the WAL.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wal := filepath.Join(dir, FileName+"-wal")
	if fi, err := os.Stat(wal); err != nil || fi.Size() <= walHeaderSize {
		t.Fatalf("precondition: the agent's close, beside the reader, left no WAL with commits: %v", err)
	}
	if err := os.Remove(wal); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, dir)
	if err == nil {
		s.Close()
		t.Fatalf("precondition: the open after the WAL was removed under the reader succeeded")
	}
	return reader, stdin, wal, err
}
