package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestDetachThatFailsInPartSaysWhatItReleased: a detach confirmed in the dashboard releases
// each of the volume's claims in turn, and the engine answers a detach that released some and
// failed others with its result (the claims released) and an error (those that failed), as
// `volume detach` prints both. The dashboard's action dropped the result whenever an error
// came with it: the user confirmed "the 2 claims, of "web-0" and "web-1", are released" and
// was told only "Detach failed: … alloc "web-1": …", nothing saying web-0's claim was released
// and its mount undone (its alloc has lost its volume). A partial detach must say which claims
// it released as well as which failed. Found by helper review74.
func TestDetachThatFailsInPartSaysWhatItReleased(t *testing.T) {
	ctx := context.Background()
	faults := csitest.NewFaults()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	e := mountingEngine(t, cfg, csitest.WithFaults(faults))
	caps := []spec.Capability{{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	for _, alloc := range []string{"web-0", "web-1"} {
		if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: alloc}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		faults.Clear(csi.RPCNodeUnpublishVolume)
		_, _ = e.Detach(context.Background(), "db", false) // unmount what the test left mounted
	})
	// The plugin refuses to unpublish web-1's target only.
	faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: codes.Internal, Message: "device busy",
		When: func(req proto.Message) bool {
			m := req.ProtoReflect()
			f := m.Descriptor().Fields().ByName("target_path")
			return f != nil && strings.Contains(m.Get(f).String(), "web-1")
		}})

	h := newHarness(t, e, Options{})
	h.keys("1")
	if h.selected() != "db" {
		t.Fatalf("selected %q, want volume db", h.selected())
	}
	h.keys("d")
	if h.m.dialog == nil {
		t.Fatalf("d opened no question; status %q", h.m.status.text)
	}
	if q := h.m.dialog.a.question(); !strings.Contains(q, `"web-0"`) || !strings.Contains(q, `"web-1"`) {
		t.Fatalf("the question does not name both claims: %s", q)
	}
	h.keys("tab", "enter")

	// What the engine did: web-0's claim released, web-1's left.
	cs, err := e.Claims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, c := range cs {
		left = append(left, c.Alloc)
	}
	if len(left) != 1 || left[0] != "web-1" {
		t.Fatalf("after the detach, claims of %q are left: want web-1's alone (the precondition of a detach that failed in part)", left)
	}
	shown := h.m.status.text
	if h.m.failure != nil {
		shown += "\n" + h.m.failure.title + "\n" + h.m.failure.err
	}
	if !h.m.status.failed {
		t.Fatalf("the detach that failed for web-1 is not reported as failed: %q", shown)
	}
	t.Logf("shown: %s", shown)
	if !strings.Contains(shown, "web-0") || !strings.Contains(shown, "released") {
		t.Errorf("a detach that released web-0's claim and failed web-1's says nothing of web-0's release (its alloc has lost its volume):\n%s", shown)
	}
}

// TestStateReplacedAfterAnotherReadFailureIsSaidInABox: a state database that cannot be used
// (replaced under the dashboard by a restored backup, the state dir moved, or damaged) is said
// in a box, with what to do (restart this volctl), since the status line cuts the error's
// words at the screen's width (docs/architecture.md, "One refresh, traced"). The box opens
// only when the read before succeeded (Update's wasOK), which was meant to open it once and
// not again with every read that fails the same way; but a read that failed for another
// reason first (the store busy past its timeout, as a restore writing it may keep it, or an
// I/O error before the damage is found) keeps it shut for good: every read after says the
// state is unusable in a status line cut to "read failed: dashboard: state …", the rows
// drawn are the old file's, and nothing says to restart. The box must open the first time a
// read finds the state unusable, whatever the read before it found. Found by helper review74.
func TestStateReplacedAfterAnotherReadFailureIsSaidInABox(t *testing.T) {
	f := fixture()
	h := newHarness(t, f, Options{})
	const db = "/var/lib/volctl/volctl.db"
	f.mu.Lock()
	f.dashErr = fmt.Errorf("dashboard: volume list: %w: another volctl held the write lock too long", store.ErrBusy)
	f.mu.Unlock()
	h.send(refreshTickMsg{})
	if h.m.live.err == nil || h.m.failure != nil {
		t.Fatalf("a busy read: live error %v, box %v; want the read failed, no box", h.m.live.err, h.m.failure != nil)
	}
	f.mu.Lock()
	f.dashErr = fmt.Errorf("dashboard: state %s: %w (another file is at its path now; a backup restored over it, or the state dir moved): nothing written, since this volctl's writes would go to the old file and be lost; restart this volctl", db, store.ErrReplaced)
	f.mu.Unlock()
	h.send(refreshTickMsg{})
	if !engine.StateUnusable(h.m.live.err) {
		t.Fatalf("the read after the restore failed with %v: want the state unusable", h.m.live.err)
	}
	out := h.m.View()
	if h.m.failure == nil || !strings.Contains(out, "The state database cannot be read") || !strings.Contains(h.m.failure.err, "restart") {
		t.Errorf("the state database was replaced under the dashboard after a busy read, and no box says so and to restart; the screen:\n%s", out)
	}
}

// mountingEngine serves a mounting in-memory plugin with cfg (and opts: its faults, an
// interceptor) and opens an engine, which sends each RPC once, with that plugin registered as
// "mem".
func mountingEngine(t *testing.T, cfg csitest.MemConfig, opts ...csitest.ServeOption) *engine.Engine {
	t.Helper()
	socket, _ := csitest.Serve(t, append([]csitest.ServeOption{csitest.WithServer(csitest.NewMountingMemPlugin(t, cfg))}, opts...)...)
	e, err := engine.Open(context.Background(), engine.Config{StateDir: t.TempDir(),
		Retry:    engine.RetryPolicy{Attempts: 1, Base: time.Millisecond, Max: time.Millisecond},
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.RegisterPlugin(context.Background(), spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	return e
}
