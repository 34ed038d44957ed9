package csi

import "context"

// ProgressFunc is told the step an operation enters: the name of each RPC as it is sent
// ("NodeStageVolume"), or what the caller is waiting for. It is called on the operation's
// goroutine and must return quickly.
type ProgressFunc func(step string)

type progressKey struct{}

// WithProgress returns a context whose operations report their steps to fn: every RPC the
// client sends under it, and whatever else the layers above report through ReportProgress.
// A command shows them on a terminal so that a slow plugin is seen working, not hung.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress tells ctx's ProgressFunc, if it has one, that step has begun.
func ReportProgress(ctx context.Context, step string) {
	if fn, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && fn != nil {
		fn(step)
	}
}
