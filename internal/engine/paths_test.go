package engine

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestMakeDirsWhileAnotherReleaseRemovesTheParent: two volumes' claims for one alloc share
// publish/<alloc>, and their volume locks do not serialize each other. While one process makes
// its target's parent, another releasing its own claim removes publish/<alloc> whenever it is
// empty. makeDirs must always succeed (TestConcurrentClaims met the ENOENT this guards against:
// "mkdir .../publish/a0/snro: no such file or directory"). The two sides use lockers of their
// own, as two processes would.
func TestMakeDirsWhileAnotherReleaseRemovesTheParent(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	root := filepath.Join(state, publishDir) // makeDirs works below the state dir only
	locker := func() *locker {
		l, err := newLocker(state)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	me, them := locker(), locker()
	ctx := context.Background()
	mine := filepath.Join(root, "a0", "vol-1", "usage")
	other := filepath.Join(root, "a0", "vol-2", "usage")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := them.makeDirs(ctx, other); err != nil {
				t.Errorf("the other release's claim: %v", err)
				return
			}
			them.removeEmptyDirs(ctx, other, root)
		}
	}()
	for i := 0; i < 1000; i++ {
		if err := me.makeDirs(ctx, filepath.Dir(mine)); err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: %v", i, err)
		}
		me.removeEmptyDirs(ctx, filepath.Dir(mine), root)
	}
	close(stop)
	wg.Wait()
	if _, err := os.Stat(filepath.Join(root, "a0")); !os.IsNotExist(err) {
		t.Errorf("publish/<alloc> left behind after every claim went: %v", err)
	}
}

// TestRemoveEmptyDirs pins what tidying after a release removes: the path and its parents
// while they are empty, never root itself, skipping levels already gone, stopping at one that
// is not empty; and nothing at all when a level (root included) is a symlink, nor anything
// where the symlink points.
func TestRemoveEmptyDirs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mk := func(t *testing.T, paths ...string) {
		t.Helper()
		for _, p := range paths {
			if err := os.MkdirAll(p, 0o750); err != nil {
				t.Fatal(err)
			}
		}
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	setup := func(t *testing.T) (l *locker, root string) {
		state := t.TempDir()
		l, err := newLocker(state)
		if err != nil {
			t.Fatal(err)
		}
		return l, filepath.Join(state, publishDir)
	}
	t.Run("empty chain", func(t *testing.T) {
		l, root := setup(t)
		mk(t, filepath.Join(root, "a", "v", "usage"))
		l.removeEmptyDirs(ctx, filepath.Join(root, "a", "v", "usage"), root)
		if exists(filepath.Join(root, "a")) || !exists(root) {
			t.Errorf("after tidying: publish/a exists %v (want false), publish exists %v (want true)", exists(filepath.Join(root, "a")), exists(root))
		}
	})
	t.Run("deepest levels gone", func(t *testing.T) {
		l, root := setup(t)
		mk(t, filepath.Join(root, "a"))
		l.removeEmptyDirs(ctx, filepath.Join(root, "a", "v", "usage"), root)
		if exists(filepath.Join(root, "a")) {
			t.Error("publish/a left behind when the levels below it were already gone")
		}
	})
	t.Run("not empty", func(t *testing.T) {
		l, root := setup(t)
		mk(t, filepath.Join(root, "a", "v", "usage"), filepath.Join(root, "a", "w"))
		l.removeEmptyDirs(ctx, filepath.Join(root, "a", "v", "usage"), root)
		if exists(filepath.Join(root, "a", "v")) || !exists(filepath.Join(root, "a", "w")) {
			t.Errorf("after tidying: publish/a/v exists %v (want false), publish/a/w exists %v (want true)",
				exists(filepath.Join(root, "a", "v")), exists(filepath.Join(root, "a", "w")))
		}
	})
	for _, link := range []string{".", "a", "a/v", "a/v/usage"} {
		t.Run("symlink at "+link, func(t *testing.T) {
			l, root := setup(t)
			// The link points at a tree holding the rest of the path, all of it empty.
			elsewhere := t.TempDir()
			rest, err := filepath.Rel(link, filepath.Join("a", "v", "usage"))
			if err != nil {
				t.Fatal(err)
			}
			mk(t, filepath.Join(elsewhere, rest), root)
			at := filepath.Join(root, link)
			mk(t, filepath.Dir(at))
			if err := os.RemoveAll(at); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, at); err != nil {
				t.Fatal(err)
			}
			l.removeEmptyDirs(ctx, filepath.Join(root, "a", "v", "usage"), root)
			if !exists(filepath.Join(elsewhere, rest)) {
				t.Errorf("tidying removed %s through the symlink at %s", filepath.Join(elsewhere, rest), at)
			}
			if !exists(at) {
				t.Errorf("tidying removed the symlink at %s", at)
			}
		})
	}
}
