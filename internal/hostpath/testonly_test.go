package hostpath

import (
	"context"
	"fmt"
)

// SnapshotPath and ListenAndServe serve only the tests: volctl's own `plugin serve` listens
// first (to report a socket in use before it opens the state) and then calls Serve.

// SnapshotPath returns the directory holding snapshot id's copy, and false for an unknown one.
func (p *Plugin) SnapshotPath(id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.state.Snapshots[id]; !ok {
		return "", false
	}
	return p.snapshotPath(id), true
}

// ListenAndServe listens on endpoint (a path or unix://PATH) as Listen does and serves until ctx
// is done. The socket is gone when it returns.
func (p *Plugin) ListenAndServe(ctx context.Context, endpoint string) error {
	path, err := ParseEndpoint(endpoint)
	if err != nil {
		return fmt.Errorf("hostpath: %w", err)
	}
	lis, err := Listen(path)
	if err != nil {
		return fmt.Errorf("hostpath: %w", err)
	}
	return p.Serve(ctx, lis)
}

// AfterEachCopiedFile has f called after each file a snapshot's or clone's copy copies, with
// its path relative to the source, until the test ends.
func AfterEachCopiedFile(t interface{ Cleanup(func()) }, f func(rel string)) {
	old := afterCopy
	afterCopy = f
	t.Cleanup(func() { afterCopy = old })
}
