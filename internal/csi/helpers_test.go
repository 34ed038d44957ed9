package csi_test

import (
	"context"
	"path"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// harness is a MemPlugin behind Faults on a real unix socket, a client on it, and a recorder of
// the raw protobuf requests the server received.
type harness struct {
	mem    *csitest.MemPlugin
	faults *csitest.Faults
	raw    *recorder
	socket string
	stop   func()
	client *csi.Client
}

type harnessConfig struct {
	mem       csitest.MemConfig
	overrides map[string]func(req any) (any, error)
	client    csi.Config
}

type harnessOption func(*harnessConfig)

// withOverride answers rpc with fn instead of the MemPlugin: how tests play a plugin that
// returns something MemPlugin never would (duplicate capabilities, partial confirmations).
func withOverride(rpc string, fn func(req any) (any, error)) harnessOption {
	return func(c *harnessConfig) { c.overrides[rpc] = fn }
}

// contentClient is the client of a test about what volctl makes of a huge answer (a map of
// 100,000 entries): encoded, sent and decoded under -race on a loaded 2-core machine, such an
// answer ran past the 5 s default short timeout, and the test saw DeadlineExceeded, not what it
// checks. A hang still ends at go test's -timeout.
var contentClient = csi.Config{Timeouts: csi.Timeouts{Short: time.Minute, Long: time.Minute}}

func withClientConfig(cfg csi.Config) harnessOption {
	return func(c *harnessConfig) { c.client = cfg }
}

func newHarness(t testing.TB, mem csitest.MemConfig, opts ...harnessOption) *harness {
	t.Helper()
	hc := harnessConfig{mem: mem, overrides: map[string]func(any) (any, error){}}
	for _, o := range opts {
		o(&hc)
	}
	h := &harness{mem: csitest.NewMemPlugin(hc.mem), faults: csitest.NewFaults(), raw: &recorder{}}
	override := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if fn, ok := hc.overrides[path.Base(info.FullMethod)]; ok {
			return fn(req)
		}
		return handler(ctx, req)
	}
	h.socket, h.stop = csitest.Serve(t, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(h.raw.interceptor), csitest.WithInterceptor(override))
	cfg := hc.client
	if cfg.ControllerSocket == "" && cfg.NodeSocket == "" {
		cfg.ControllerSocket, cfg.NodeSocket = h.socket, h.socket
	}
	c := csitest.NewClient(t, cfg)
	h.client = c
	return h
}

// recorder keeps every raw request by RPC name, to check what went on the wire.
type recorder struct {
	mu   sync.Mutex
	reqs map[string][]proto.Message
}

func (r *recorder) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	r.mu.Lock()
	if r.reqs == nil {
		r.reqs = map[string][]proto.Message{}
	}
	rpc := path.Base(info.FullMethod)
	r.reqs[rpc] = append(r.reqs[rpc], req.(proto.Message))
	r.mu.Unlock()
	return handler(ctx, req)
}

func (r *recorder) last(t testing.TB, rpc string) proto.Message {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	reqs := r.reqs[rpc]
	if len(reqs) == 0 {
		t.Fatalf("no %s request recorded", rpc)
	}
	return reqs[len(reqs)-1]
}

func ptr[T any](v T) *T { return &v }
