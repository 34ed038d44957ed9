package csi_test

import (
	"context"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// BenchmarkClient measures one round trip per RPC through the client (timeouts, interceptor,
// translation) against MemPlugin over a real unix socket.
func BenchmarkClient(b *testing.B) {
	w := newWorld(b)
	calls := w.calls()
	ctx := context.Background()
	for _, rpc := range csi.RPCs {
		call := calls[rpc]
		b.Run(rpc, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
