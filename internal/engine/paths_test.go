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
