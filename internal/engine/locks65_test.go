package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// docs/architecture.md, Lock waits: "A command waits for a lock another process holds while its
// context lasts, saying so as progress ..., and who holds it ...; every error of the wait names
// them too. Once every holder has been stopped by a signal (^Z, SIGSTOP) for 10 s, the wait
// gives up, naming them". The directory lock (locks/dirs.lock, locker.dirs) is waited for with
// flock's TryLockContext instead of await: a volctl stopped (^Z) while it holds it (the target
// index's build walks the whole publish tree under it, exclusively) holds every claim of every
// volume, in every process, until the claim's context ends: in a script, for ever, silently,
// and the error then names neither the holder nor what to do. Found by helper review65.
func TestClaimBehindAStoppedHolderOfTheDirectoryLockGivesUpNamingIt(t *testing.T) {
	t.Parallel()
	_, holder, err, ended := claimBehindAStoppedHolder(t, "dirs", 8*time.Second)
	pid := holder.Process.Pid
	if err == nil || ended != nil {
		t.Fatalf("claim behind a stopped holder of the directory lock: %v (context ended: %v); want it to give up, as behind a stopped holder of the volume's lock, before its context ends", err, ended)
	}
	if want := fmt.Sprintf("pid %d: flock, stopped", pid); !strings.Contains(err.Error(), want) {
		t.Fatalf("claim behind a stopped holder of the directory lock: %v; want it to name the holder (%q)", err, want)
	}
}

// docs/architecture.md, Lock waits: "A background pass, the agent's reconcile and claim GC,
// waits at most Config.PassLockWait ... per lock". Its tidying of the state dir's empty
// directories (tidyDirs -> removeEmptyDirs) takes the directory lock exclusively through
// TryLockContext, with no bound: a claim in another process that holds it shared (its
// makeDirs, under a hung FUSE mount's mkdir) or one stopped holding it held every pass of the
// agent, every volume's restore and release after it, for ever. Found by helper review65.
func TestPassDoesNotWaitForeverForTheDirectoryLock(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.open(Config{PassLockWait: 200 * time.Millisecond})
	// An empty publish directory nothing accounts for: the pass's tidying removes it, under
	// the directory lock.
	if err := os.MkdirAll(filepath.Join(h.dir, publishDir, "gone-alloc"), 0o700); err != nil {
		t.Fatal(err)
	}
	holdLockInAnotherProcess(t, h, "dirs") // running, not stopped: a holder that runs
	ctx, cancel := context.WithTimeout(h.ctx, 8*time.Second)
	defer cancel()
	start := time.Now()
	_, _ = h.e.Reconcile(ctx)
	if ctx.Err() != nil {
		t.Fatalf("reconcile with PassLockWait 200ms behind another process's hold of locks/dirs.lock ran %s, until its context ended; want it to give the lock up after PassLockWait", time.Since(start).Round(time.Millisecond))
	}
}

// A lock file replaced, while a command waits for it, by something volctl never makes there is
// refused as it is when met at the first look (file: "lock file X is a symlink, not a regular
// file as volctl makes them: remove it, and volctl makes it again";
// TestLockFileThatIsNotARegularFileIsRefused). await's retries reopen the path (flock's
// TryLock closes its file when the lock is not taken) without that check: a symlink put there
// is ELOOP, "too many levels of symbolic links", naming no symlink and no way out; a named pipe
// is opened and locked, the command going on under a lock on a pipe that every other command
// refuses. Found by helper review65.
func TestLockFileReplacedWhileWaitedForIsRefusedByName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"symlink", func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), path); err != nil {
				t.Fatal(err)
			}
		}, "is a symlink, not a regular file"},
		{"named pipe", mkfifo, "is a named pipe, not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			holder, err := newLocker(dir)
			if err != nil {
				t.Fatal(err)
			}
			waiter, err := newLocker(dir)
			if err != nil {
				t.Fatal(err)
			}
			release, err := holder.volume(context.Background(), "db")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			waiting := make(chan struct{}, 1)
			ctx = WithProgress(ctx, func(step string) {
				if strings.HasPrefix(step, "waiting for the lock") {
					select {
					case waiting <- struct{}{}:
					default:
					}
				}
			})
			done := make(chan error, 1)
			go func() {
				unlock, err := waiter.volume(ctx, "db")
				if unlock != nil {
					unlock()
				}
				done <- err
			}()
			<-waiting
			// Replaced by a rename, as an editor or a script would: a remove, then a make, let the
			// waiter's retry create a regular file between the two (the make then failing with
			// EEXIST, as CI once saw).
			path := filepath.Join(holder.dir, "volume-db.lock")
			tt.make(t, path+".new")
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
			release()
			err = <-done
			if err == nil || !strings.Contains(err.Error(), path+" "+tt.want) {
				t.Fatalf("the wait for a lock whose file became a %s: err = %v; want it refused, saying %q", tt.name, err, path+" "+tt.want)
			}
		})
	}
}
