package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// `plugin register --wait` stopped by a signal while it waited for the plugin's socket
// returned the socket's error alone ("... does not exist"), exit 1: nothing said that a signal
// stopped volctl, nor that it stopped waiting, against the README's promise that a stopped
// command names the signal (SaySignal finds no "context canceled" in it). It now says both.
// Found by helper review81 (timeouts).
func TestPluginRegisterWaitInterruptedSaysSo(t *testing.T) {
	h := newCLIHarness(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	time.AfterFunc(300*time.Millisecond, func() { cancel(StopSignal{Name: "SIGINT"}) })
	p := spec.Plugin{ID: "late", Type: spec.PluginMonolith, Socket: filepath.Join(t.TempDir(), "late.sock")}
	_, _, err := registerWaiting(ctx, h.e, p, 30*time.Second)
	err = SaySignal(ctx, err)
	if err == nil || !strings.Contains(err.Error(), "SIGINT received") || !strings.Contains(err.Error(), "stopped waiting") {
		t.Fatalf("plugin register --wait 30s stopped by SIGINT while it waited: %v; want the socket's error, that it stopped waiting, and the signal", err)
	}
}
