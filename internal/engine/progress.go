package engine

import (
	"context"

	"github.com/volctl/volctl/internal/csi"
)

// WithProgress returns a context under which the engine reports each step an operation
// enters to fn: every CSI RPC as it is sent, a wait for another volctl's lock, a retry after a
// retryable failure. Commands show them on a terminal (claim, release, create, ...).
func WithProgress(ctx context.Context, fn func(step string)) context.Context {
	return csi.WithProgress(ctx, fn)
}
