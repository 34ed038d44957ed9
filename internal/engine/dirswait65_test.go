package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPassWaitsOutTheDirectoryLockOncePerPass (found by helper review65): dirs.lock is now
// waited for through await with the pass's PassLockWait, but dirs() never notes a lock waited
// out nor looks for one (lockWaits.outwaited/note are lockOnce's alone). docs/architecture.md
// says dirs.lock "is waited for as every lock is ... a pass's wait bounded", and a pass waits
// at most PassLockWait per lock, each waited out once a pass
// (TestPassWaitsForAHeldVolumesLockOncePerPass). A reconcile pass that finds N empty publish
// directories to tidy, behind a holder of dirs.lock that runs (a claim's mkdir under a hung FUSE
// mount), waits the bound N times: with the agent's 30 s and 20 stale alloc dirs, ten minutes
// of a pass in which no other volume is restored.
func TestPassWaitsOutTheDirectoryLockOncePerPass(t *testing.T) {
	h := newHarness(t, nil)
	const bound = 300 * time.Millisecond
	h.open(Config{PassLockWait: bound})
	const dirs = 6
	for i := range dirs {
		if err := os.MkdirAll(filepath.Join(h.dir, publishDir, fmt.Sprintf("gone-alloc-%d", i)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	holdLockInAnotherProcess(t, h, "dirs") // running, not stopped
	var mu sync.Mutex
	waits := 0
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	ctx = WithProgress(ctx, func(step string) {
		if strings.HasPrefix(step, "waiting for the lock on the state dir's directories") {
			mu.Lock()
			waits++
			mu.Unlock()
		}
	})
	start := time.Now()
	_, _ = h.e.Reconcile(ctx)
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if waits > 1 || took > 3*bound {
		t.Errorf("reconcile pass with PassLockWait %s behind a running holder of locks/dirs.lock waited for it %d times, %s in all; want it waited out once a pass, as every other lock",
			bound, waits, took.Round(time.Millisecond))
	}
}
