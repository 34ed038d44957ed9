package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store/storetest"
)

// TestTimedOutRPCSaysHowToRaiseTheTimeout: a plugin slower than its long-RPC timeout (a cloud
// disk that takes minutes to stage), not hung, fails a claim with "plugin "x" did not answer
// within 2m0s; it may still be working: run `volctl reconcile` later", on every try, and
// nothing said the limit is the plugin's own setting, nor how to raise it. The error now
// names the command that registers the plugin again, with its own sockets and a longer
// timeout; pasted as it is (the plugin's ID and socket path quoted for a shell), volctl takes
// it and the plugin's timeout is the one advised.
func TestTimedOutRPCSaysHowToRaiseTheTimeout(t *testing.T) {
	ctx := context.Background()
	faults := csitest.NewFaults()
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())), csitest.WithFaults(faults))
	state := filepath.Join(t.TempDir(), "state")
	storetest.Seed(t, state)
	// The engine's default long timeout short, as a plugin's own can be no less than 1s.
	e, err := engine.Open(ctx, engine.Config{StateDir: state, Timeouts: csi.Timeouts{Short: 5 * time.Second, Long: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	const id = "it's $slow"
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: id, Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: id,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	faults.Hang(csi.RPCNodeStageVolume)
	code, errOut := runOn(ctx, e, "volume", "claim", "v", "--alloc", "a")
	if code != ExitError || !strings.Contains(errOut, "did not answer within 300ms") {
		t.Fatalf("claim against a plugin slower than its timeout: exit %d: %s", code, errOut)
	}
	advised := lastAdvised(errOut, "volctl plugin register")
	if advised == "" {
		t.Fatalf("the timed-out claim's error says nothing of the plugin's timeout nor how to raise it: %s", errOut)
	}
	if err := parseAdvised(t, advised); err != nil {
		t.Fatalf("the timed-out claim advises `%s`, which volctl refuses: %v", advised, err)
	}
	faults.Clear()
	if code, errOut := runOn(ctx, e, shellquotetest.RunArgs(t, advised)...); code != ExitOK {
		t.Fatalf("`%s`, run as advised: exit %d: %s", advised, code, errOut)
	}
	plugins, err := e.PluginSpecs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(plugins) != 1 || plugins[0].ID != id || plugins[0].Timeout != time.Second {
		t.Fatalf("after `%s`: plugins %+v, want %q with the advised timeout, 1s", advised, plugins, id)
	}
}
