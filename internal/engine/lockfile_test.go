package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A lock file replaced by something volctl never makes there is refused, naming it, rather than
// followed or waited on. A named pipe held every command that locked the volume in open(2), where
// neither Ctrl-C nor its context reached it (SIGTERM did not end `volctl volume release`); a
// symlink made volctl create and lock the file it points to, wherever that is.
func TestLockFileThatIsNotARegularFileIsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lock string // the lock file's name under locks/
		take func(ctx context.Context, l *locker) (release func(), err error)
		make func(t *testing.T, path string)
		want string
	}{
		{"named pipe, volume lock", "volume-db.lock",
			func(ctx context.Context, l *locker) (func(), error) { return l.volume(ctx, "db") },
			mkfifo, "is a named pipe, not a regular file"},
		{"named pipe, directory lock", "dirs.lock",
			func(ctx context.Context, l *locker) (func(), error) {
				release, _, err := l.dirs(ctx, false)
				return release, err
			},
			mkfifo, "is a named pipe, not a regular file"},
		{"named pipe, agent lock", "agent.lock",
			func(_ context.Context, l *locker) (func(), error) {
				release, _, err := l.exclusive("agent")
				return release, err
			},
			mkfifo, "is a named pipe, not a regular file"},
		{"symlink, volume lock", "volume-db.lock",
			func(ctx context.Context, l *locker) (func(), error) { return l.volume(ctx, "db") },
			func(t *testing.T, path string) {
				if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), path); err != nil {
					t.Fatal(err)
				}
			}, "is a symlink, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := newLocker(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(l.dir, tt.lock)
			tt.make(t, path)
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				release, err := tt.take(ctx, l)
				if release != nil {
					release()
				}
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				// Let the stuck open return, so the test can end.
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatalf("taking the lock on %s hung", path)
			}
			if err == nil || !strings.Contains(err.Error(), path+" "+tt.want) {
				t.Fatalf("taking the lock: err = %v, want it to say %q", err, path+" "+tt.want)
			}
			if target, err := os.Readlink(path); err == nil {
				if _, err := os.Lstat(target); err == nil {
					t.Errorf("the symlink's target %s was created", target)
				}
			}
		})
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}
