package csi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
)

// stoppedListener is a plugin socket whose listener accepts nothing: a plugin process
// stopped (SIGSTOP, ^Z) or hung before its accept loop. Connections made to it wait in its
// accept queue, which holds as many as the listen backlog, and are made until it is full: as
// every connection volctl and its agent made to a stopped plugin (each gRPC reconnect after
// the handshake's timeout) stays queued until it is accepted, closed by the client or not.
func stoppedListener(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "h67")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "csi.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: socket}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
	// Fill the accept queue, as earlier connections to the stopped plugin did.
	for i := 0; ; i++ {
		c, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Connect(c, &syscall.SockaddrUnix{Name: socket})
		if err != nil {
			syscall.Close(c)
			if err != syscall.EAGAIN {
				t.Fatalf("connect: %v", err)
			}
			break
		}
		t.Cleanup(func() { syscall.Close(c) })
		if i > 100 {
			t.Fatal("the accept queue never filled")
		}
	}
	return socket
}

// A plugin stopped with its accept queue full is a hung plugin: the probe says so and names
// the socket, as the handshake that never completes does ("a hung plugin"). It said
// "plugin socket X: connect: resource temporarily unavailable" and advised checking the
// socket's permissions, which are fine, and the claim path took it for a plugin gone
// (csi.IsUnreachable), not one whose Probe failed. Found by helper review67.
func TestStoppedPluginWithAFullAcceptQueueIsNotAPermissionProblem(t *testing.T) {
	socket := stoppedListener(t)
	c, err := csi.New(csi.Config{Name: "hp", NodeSocket: socket, Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Probe(context.Background())
	t.Logf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil {
		t.Fatal("a probe of a stopped plugin succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "permission") {
		t.Errorf("the error advises checking permissions for a plugin that accepts nothing (stopped or hung): %q", msg)
	}
	if !strings.Contains(msg, "hung") && !strings.Contains(msg, "stopped") && !strings.Contains(msg, "not accepting") {
		t.Errorf("the error does not say the plugin accepts no connection (hung or stopped): %q", msg)
	}
}
