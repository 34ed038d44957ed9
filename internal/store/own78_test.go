package store

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// adviceCommand is the first backticked command after lead in msg ("resume it (`kill -CONT
// 12`": "kill -CONT 12"), or "" when msg gives none there.
func adviceCommand(msg, lead string) string {
	m := regexp.MustCompile(regexp.QuoteMeta(lead) + "[^`]*`([^`]+)`").FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestMigrationBehindAStoppedVolctlAdvisesNoResumeThatKeepsTheLock: a volctl that must migrate
// the state waits for every other volctl that has it open (an agent, a dashboard: each holds
// the open lock shared for as long as it runs). One of them stopped by a signal (^Z), the
// migration's refusal now says (StuckHolders, migrateTo) "resume it (`kill -CONT PID`, or `fg`
// in its shell) or end it ..., and run this again". Resuming a dashboard or an agent does not
// make it close the state: it runs on, holding the open lock, and the run again waits out the
// busy timeout and is refused ("stop them ... and run this again"). The open-lock holder of a
// migration is let go only by its end; resuming it is advice for a lock held for a moment (the
// write lock, or the exclusive open lock of a migration under way), not for this one. The
// refusal must not offer resuming as a way for the run again to go through: it must say to
// end (close) the stopped volctl. Found by helper review78 (own).
func TestMigrationBehindAStoppedVolctlAdvisesNoResumeThatKeepsTheLock(t *testing.T) {
	dir := t.TempDir()
	pid, finish, err := openBehindAStoppedOlderVolctl(t, dir) // an older volctl that keeps the state open as it runs
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("Open behind a stopped older volctl: %v; want ErrInUse", err)
	}
	if resume := adviceCommand(err.Error(), "resume it ("); resume != "" || adviceCommand(err.Error(), "end it (") == "" {
		t.Errorf("the migration's refusal behind a stopped volctl: %v\nwant no resume offered (resumed, a volctl keeps the open lock as it runs) and the way to end it", err)
	}
	// Resumed alone, as a dashboard or an agent does, it keeps the lock: the run again is refused.
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if s, again := Open(context.Background(), dir, WithBusyTimeout(time.Second)); again == nil {
		s.Close()
		t.Fatal("precondition: the open migrated with the resumed older volctl still holding the open lock")
	}
	finish()
}

// TestMigrationBehindAStoppedVolctlItsEndAdviceEndsIt: the migration's refusal behind a volctl
// stopped by a signal (StuckHolders, migrateTo) advises "end it (`kill PID`; ...), and run this
// again". volctl handles SIGTERM (cmd/volctl: signal.NotifyContext), and a signal a process
// handles is not delivered while it is stopped: `kill PID` leaves the stopped volctl stopped,
// holding the open lock, SIGTERM pending, and the run again gets the same refusal. Followed as
// written, the advice must end a stopped holder that handles SIGTERM as volctl does (say
// `kill PID` then `kill -CONT PID`, or `kill -KILL PID`). The holder here is perl holding the
// open lock shared with a SIGTERM handler that exits, as a volctl dashboard does. Found by
// helper review78 (own).
func TestMigrationBehindAStoppedVolctlItsEndAdviceEndsIt(t *testing.T) {
	dir := t.TempDir()
	old, err := open(context.Background(), dir, SchemaVersion()-1)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, FileName) + lockSuffix
	pid, exited := startStoppedHolder(t, exec.Command("perl", "-e", `use Fcntl qw(:flock); open(my $f, "<", $ARGV[0]) or die "open: $!"; flock($f, LOCK_SH) or die "flock: $!"; $SIG{TERM} = sub { exit 0 }; $| = 1; print "held\n"; sleep 600 while 1;`, lock), lock)

	s, err := Open(context.Background(), dir, WithBusyTimeout(time.Second))
	if err == nil {
		s.Close()
		t.Fatalf("Open migrated the state while pid %d (stopped) held the open lock", pid)
	}
	end := adviceCommand(err.Error(), "end it (")
	if !errors.Is(err, ErrInUse) || end == "" {
		t.Fatalf("Open behind a stopped holder of the open lock: %v; want ErrInUse saying how to end it (\"end it (`...`\")", err)
	}
	// The advice followed as written: ended, then run again.
	if out, rerr := exec.Command("sh", "-c", end).CombinedOutput(); rerr != nil {
		t.Fatalf("running the advised %q: %v: %s", end, rerr, out)
	}
	select {
	case <-exited:
	case <-time.After(3 * time.Second):
		s, again := Open(context.Background(), dir, WithBusyTimeout(time.Second))
		if again == nil {
			s.Close()
		}
		t.Fatalf("the migration's refusal behind a stopped holder that handles SIGTERM (as volctl does) advised ending it:\n  %v\nfollowed (`%s`), the holder is still there, stopped, holding the open lock "+
			"(a stopped process takes a handled SIGTERM only once resumed), and the run again: %v", err, end, fmt.Sprint(again))
	}
	s, err = Open(context.Background(), dir, WithBusyTimeout(time.Second))
	if err != nil {
		t.Fatalf("Open once the holder was ended as advised: %v", err)
	}
	s.Close()
}
