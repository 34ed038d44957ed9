package csi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestPeerRefusalIsNotTheLaterFailuresCause: a connection CheckPeer refused (an impostor on the
// socket), and then nothing listening there at all: the next RPC failed with the old refusal,
// naming a process long gone, where the plugin is simply not listening. The refusal is what
// an RPC fails with only while it is the last connection's word.
func TestPeerRefusalIsNotTheLaterFailuresCause(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{CheckPeer: func(string, *unix.Ucred) error {
		if refuse.Load() {
			return errors.New("IMPOSTOR refused")
		}
		return nil
	}}))
	ctx := context.Background()
	if _, err := h.client.GetPluginInfo(ctx); err == nil || !strings.Contains(err.Error(), "IMPOSTOR refused") {
		t.Fatalf("GetPluginInfo through a refused connection: %v, want the refusal", err)
	}
	refuse.Store(false)
	h.stop()
	// gRPC dials again after its backoff (50 ms, growing: reconnectBackoff); until then an RPC
	// fails with the last connection's word, the refusal. Past a few backoffs, nothing listening
	// is the word.
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err = h.client.GetPluginInfo(ctx); err == nil {
			t.Fatal("GetPluginInfo with nothing listening succeeded")
		}
		if !strings.Contains(err.Error(), "IMPOSTOR") {
			return
		}
	}
	t.Errorf("GetPluginInfo with nothing listening failed with the earlier refusal for 5 s: %v", err)
}

// CheckAccepted is asked once a connection's first data arrived, with the connection itself
// (whose other end some process has accepted by then): its refusal fails the RPC, nothing sent
// to the plugin; once it lets the next connection through, the RPC goes.
func TestCheckAcceptedRefusalFailsTheRPC(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	var asked atomic.Int32
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{
		CheckPeer: func(string, *unix.Ucred) error { return nil },
		CheckAccepted: func(_ string, _ *unix.Ucred, nc net.Conn) error {
			asked.Add(1)
			if _, ok := nc.(*net.UnixConn); !ok {
				return fmt.Errorf("CheckAccepted given a %T, want the unix connection", nc)
			}
			if refuse.Load() {
				return errors.New("ACCEPTED-ELSEWHERE refused")
			}
			return nil
		}}))
	ctx := context.Background()
	if _, err := h.client.GetPluginInfo(ctx); err == nil || !strings.Contains(err.Error(), "ACCEPTED-ELSEWHERE refused") {
		t.Fatalf("GetPluginInfo through a connection CheckAccepted refused: %v, want the refusal", err)
	}
	if n := h.mem.CallCount(csi.RPCGetPluginInfo); n != 0 {
		t.Errorf("the plugin got GetPluginInfo %d times through the refused connection", n)
	}
	refuse.Store(false)
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err = h.client.GetPluginInfo(ctx); err == nil {
			break
		}
	}
	if err != nil || asked.Load() < 2 {
		t.Errorf("GetPluginInfo once CheckAccepted lets the connection through: %v (asked %d times)", err, asked.Load())
	}
}
