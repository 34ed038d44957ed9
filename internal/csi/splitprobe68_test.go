package csi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A split plugin's Probe goes to both halves, two processes on two sockets. When one half
// fails it (held past volctl's timeout, or answering an error of its own), the error is what
// `plugin status` shows and a claim's refusal quotes: it named the plugin ("plugin "split"
// did not answer ...; check its logs") but not the half or the socket that failed, so the
// user could not tell which of the two processes was stuck, nor whose logs to check. Every
// other per-half failure names the socket (HalvesDiffer, a missing socket, a refused
// connection). Found by helper review68.
func TestSplitProbeFailureNamesTheHalfThatFailed(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault func(f *csitest.Faults)
	}{
		{"hung", func(f *csitest.Faults) { f.Hang(csi.RPCProbe) }},
		{"answered unavailable", func(f *csitest.Faults) { f.FailAlways(csi.RPCProbe, codes.Unavailable) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
			nodeFaults := csitest.NewFaults()
			tt.fault(nodeFaults)
			ctrlSock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) { mem.RegisterServices(s, csitest.Identity, csitest.Controller) }))
			nodeSock, _ := csitest.Serve(t, csitest.WithFaults(nodeFaults), csitest.WithRegister(func(s *grpc.Server) { mem.RegisterServices(s, csitest.Identity, csitest.Node) }))
			c := csitest.NewClient(t, csi.Config{Name: "split", ControllerSocket: ctrlSock, NodeSocket: nodeSock,
				Timeouts: csi.Timeouts{Short: 300 * time.Millisecond, Long: 300 * time.Millisecond}})
			_, err := c.Probe(context.Background())
			if err == nil {
				t.Fatal("Probe with the node half failing succeeded")
			}
			if msg := err.Error(); !strings.Contains(msg, "the node half, at socket "+nodeSock) || strings.Contains(msg, ctrlSock) {
				t.Errorf("Probe's error = %v\nwant it to name the node half's socket %s (the one that failed), not only plugin \"split\"", err, nodeSock)
			}
		})
	}
}
