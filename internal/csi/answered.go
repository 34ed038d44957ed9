package csi

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/stats"
)

// answeredKey is a context key: the flag invoke gives each RPC, which answerWatcher sets when
// the plugin ended the call with a status of its own.
type answeredKey struct{}

// answerWatcher is the connection's gRPC stats handler: it marks an RPC answered when gRPC
// reads the trailers that end it (stats.InTrailer, a trailers-only answer included), which
// only the server sends. gRPC gives an UNAVAILABLE both for a connection it could not make or
// lost and for a plugin that answered UNAVAILABLE itself (its storage backend out of reach, most
// often); the first is a plugin not answering, the second a plugin that is running and said
// so, and nothing else in the error tells them apart (translate, Error.Answered). Every other
// event is passed over.
type answerWatcher struct{}

func (answerWatcher) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (answerWatcher) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.InTrailer); ok {
		if a, ok := ctx.Value(answeredKey{}).(*atomic.Bool); ok {
			a.Store(true)
		}
	}
}

func (answerWatcher) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (answerWatcher) HandleConn(context.Context, stats.ConnStats) {}
