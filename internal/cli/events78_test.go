package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/store/storetest"
)

// appendEventsElsewhere records n events of kind in the state dir dir, through a store of
// their own (another volctl), which it closes: checkpointed, no WAL left, unless atExit (as a
// volctl command leaves it: CloseAtExit).
func appendEventsElsewhere(t *testing.T, dir, kind string, n int, atExit bool) {
	t.Helper()
	s, err := store.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(context.Background(), func(tx *store.Tx) error {
		for i := range n {
			if err := tx.Events().Append(&store.Event{Kind: "plugin-health", PluginID: "mem", Message: fmt.Sprintf("%s %d", kind, i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if atExit {
		if err := s.CloseAtExit(); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, store.FileName+"-wal")); err == nil {
		t.Fatalf("precondition: a WAL is left in %s after the writer closed", dir)
	}
}

// TestEventsFollowOnAReadOnlyStateMissesNoEventOfARestoredBackup: `events --follow` on a state
// dir reached read-only (a read-only bind of the live state dir, as a monitoring container
// has it) opens the database immutable, and its store opens the file at the path again when
// it changes (store.readPool): CheckStateFile then passes, so the follow does not stop as it
// does on a writable state when a backup is restored over volctl.db. But it goes on from the
// ID it reached in the old file: an older backup's log ends lower, so the events every volctl
// records in the restored file get IDs the follow has passed already, and are never printed,
// with no warning (Dropped counts only the log's old end). Here the old file held 8 events and
// the backup 3: of the 6 events recorded after the restore, the follow prints the last alone,
// and exit status, stderr and stdout say nothing of the other 5. Correct: a follow whose file
// was replaced under it stops saying so, as on a writable state. The fault: eventsRun
// (internal/cli/events.go) kept `last` across the store's reopening of another file, which
// engine.EventsFollowed cannot see; CheckStateFile now compares the first file opened
// (store.CheckFirstFile). Found by helper review78 (events).
func TestEventsFollowOnAReadOnlyStateMissesNoEventOfARestoredBackup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	storetest.Seed(t, dir)
	appendEventsElsewhere(t, dir, "before backup", 3, false)
	backup, err := os.ReadFile(filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	appendEventsElsewhere(t, dir, "after backup", 5, false) // the live log: ids 1 to 8

	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dir, ro, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("precondition: bind-mounting the state dir (needs root with CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(ro, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", ro, err)
		}
	})
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("precondition: remounting the bind read-only: %v", err)
	}
	e, err := engine.Open(context.Background(), engine.Config{StateDir: ro})
	if err != nil {
		t.Fatalf("open on the read-only bind %s: %v", ro, err)
	}
	t.Cleanup(func() { e.Close() })

	ios, _, _, _ := iostreams.Test()
	out, errOut := &iostreams.SyncBuffer{}, &iostreams.SyncBuffer{}
	ios.Out, ios.ErrOut = out, errOut
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const poll = 10 * time.Millisecond
	opts := &EventsOptions{IO: ios, Engine: func(context.Context) (*engine.Engine, error) { return e, nil }, Now: time.Now, Follow: true, Poll: poll}
	opts.Exporter.JSON = true
	done := make(chan error, 1)
	go func() { done <- eventsRun(ctx, opts) }()
	waitFor := func(what string, ok func() bool) bool {
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				return false
			}
		}
		return true
	}
	if !waitFor("the log", func() bool { return strings.Contains(out.String(), `"after backup 4"`) }) {
		t.Fatalf("precondition: the follow did not print the live log's 8 events within 30s; stdout:\n%s\nstderr:\n%s", out, errOut)
	}

	storetest.Restore(t, dir, backup) // the older backup restored over volctl.db
	const after = 6
	appendEventsElsewhere(t, dir, "after restore", after, true) // ids 4 to 9 in the restored file

	// It stops, saying the state was replaced, as on a writable state (exit 1: a restart
	// follows the new file from its own log).
	select {
	case ended := <-done:
		if ended == nil || !strings.Contains(ended.Error(), "replaced") || ExitCode(ended) != ExitError {
			t.Errorf("the follow ended with %v (exit %d) after the backup was restored; want an error saying the state database was replaced, exit %d", ended, ExitCode(ended), ExitError)
		}
		if strings.Contains(out.String(), "after restore") {
			t.Errorf("the follow printed events of the restored file as if they followed the old one's; stdout:\n%s", out)
		}
	case <-time.After(30 * time.Second):
		var missing []string
		for i := range after {
			if m := fmt.Sprintf(`"after restore %d"`, i); !strings.Contains(out.String(), m) {
				missing = append(missing, m)
			}
		}
		cancel()
		<-done
		t.Errorf("events --follow on a read-only state, with an older backup restored over volctl.db and %d events recorded in it since, did not stop within 30s, "+
			"%d of those events never printed (%s), nothing said (stderr %q); stdout:\n%s",
			after, len(missing), strings.Join(missing, ", "), errOut.String(), out)
	}
}

// TestEventsFollowSinceInTheFutureShowsNoEarlierEvent: `events --since TIME` keeps the events
// since TIME, and a TIME in the future is taken as it is (parseSince refuses only a negative
// duration). Without --follow it prints "No events match." (exit 0); with --follow the filter
// is applied to the events already in the log alone, and every event recorded afterwards is
// printed whatever its time: `events --since 2030-01-01T00:00:00Z --follow` (or a time whose
// offset was mistyped) prints events of today, each before the time the user asked for.
// Correct: the followed events are held to it as the first ones are (a time in the future is a
// time to follow from: a watch from midnight on). The fault: eventsRun (internal/cli/events.go)
// dropped events before since from its first read only, not from each poll's. Found by helper
// review78 (events).
func TestEventsFollowSinceInTheFutureShowsNoEarlierEvent(t *testing.T) {
	h := newCLIHarness(t)
	ios, _, _, _ := iostreams.Test()
	out, errOut := &iostreams.SyncBuffer{}, &iostreams.SyncBuffer{}
	ios.Out, ios.ErrOut = out, errOut
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	since := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	opts := &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Follow: true, Poll: 10 * time.Millisecond, Since: since}
	opts.Exporter.JSON = true
	done := make(chan error, 1)
	go func() { done <- eventsRun(ctx, opts) }()
	time.Sleep(50 * time.Millisecond) // the follow's first read
	select {
	case err := <-done:
		t.Fatalf("events --since %s --follow ended with %v (exit %d) before any event; want it to follow, from that time on", since, err, ExitCode(err))
	default:
	}
	h.createVolume(t, "db", spec.SingleNodeWriter)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(out.String(), `"volume_id":"db"`) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow ended with %v", err)
	}
	if strings.Contains(out.String(), `"volume_id":"db"`) {
		t.Errorf("events --since %s --follow printed events recorded now, a day before the time it was asked to show events since; stdout:\n%s", since, out)
	}
}
