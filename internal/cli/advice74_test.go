package cli

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestAdvicePrintedRunsAsPrinted: each command volctl prints as advice, reached through the
// real code path with an awkward ID where one matters, is a command line volctl's own command
// tree takes (parseAdvised: the subcommand, its flags, its argument count), and where the case
// says so, run as printed off a terminal (a script, or the advice pasted into one), it does what
// it says, exit 0. Each case is a defect:
//
//   - `volctl volume list 'a b'` refuses ("takes no argument") and tells the user "to show one:
//     volctl volume status a b": the ID put in raw (withListAliases, root.go), two arguments,
//     refused ("accepts at most 1 arg(s), received 2"). It should be
//     `volctl volume status 'a b'` (shellquote.Command).
//   - A release whose plugin answers NodeUnpublishVolume NOT_FOUND over a mount still there
//     names `volctl events --plugin my hp --kind plugin-register` for plugin "my hp": the
//     plugin ID is given to CommandFlags as a raw flag word (reregisteredWords,
//     engine/release.go), so "hp" is an argument events refuses. It should be
//     shellquote.Flag("--plugin", p.ID).
//   - A `volume delete --yes` refused for live claims whose plugin was deregistered with
//     --force advises `volctl volume detach v --force`, which off a terminal is refused for want
//     of --yes (exit 2), where the sibling advice (`volctl volume detach v --yes`,
//     forceDetachCommand's `--force --yes`) carries it (claimsRefusal, engine/volumes_delete.go).
//   - A `volume deregister --yes` refused for a live claim advises "or `volctl volume
//     deregister v --force` releases them first": off a terminal refused the same way.
//   - A `volume snapshot delete` of a pending create that another volctl forgot while this one
//     waited for the volume's lock says "`volctl volume snapshot list mem` shows what the
//     plugin has": snapshot list takes the plugin as --plugin, and refuses the argument
//     (finishPendingForDelete, engine/snapshots.go). It should be
//     "volctl volume snapshot list "+shellquote.Flag("--plugin", id), as its neighbours write it.
//
// Found by helper review74.
func TestAdvicePrintedRunsAsPrinted(t *testing.T) {
	requireMount(t)
	for _, tt := range []struct {
		name string
		// advise sets up the case, runs what volctl is given, and returns the advised command
		// and the engine to run it on (nil: parsed only).
		advise func(t *testing.T) (advised string, e *engine.Engine, whole string)
	}{
		{"volume list given an ID with a space", func(t *testing.T) (string, *engine.Engine, string) {
			_, e, _ := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()))
			code, errOut := runOn(context.Background(), e, "volume", "list", "a b")
			if code != ExitUsage {
				t.Fatalf("volume list 'a b': exit %d, want %d: %s", code, ExitUsage, errOut)
			}
			_, after, ok := strings.Cut(errOut, "to show one: ")
			if !ok {
				t.Fatalf("volume list 'a b' advises no command to show one: %s", errOut)
			}
			cmd, _, _ := strings.Cut(after, "\n")
			return strings.Trim(cmd, "`"), nil, errOut
		}},
		{"release NOT_FOUND over a mount, plugin ID with a space", func(t *testing.T) (string, *engine.Engine, string) {
			ctx := context.Background()
			faults := csitest.NewFaults()
			socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())), csitest.WithFaults(faults))
			e := openEngine(t, filepath.Join(t.TempDir(), "state"))
			if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "my hp", Type: spec.PluginMonolith, Socket: socket}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.CreateVolume(ctx, spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "my hp",
				Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "v", Alloc: "a1"}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { faults.Clear(); _, _ = e.Reconcile(ctx) })
			faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.NotFound)
			code, errOut := runOn(ctx, e, "volume", "release", "v", "--alloc", "a1")
			if code == ExitOK {
				t.Fatalf("release with the target left mounted: exit 0: %s", errOut)
			}
			return lastAdvised(errOut, "volctl events"), nil, errOut
		}},
		{"delete refused for claims through a plugin deregistered with --force", func(t *testing.T) (string, *engine.Engine, string) {
			ctx := context.Background()
			_, e, _ := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()))
			createSingleWriter(t, e, "v")
			claimUntilCleanup(t, e, "v", "a1")
			if err := e.DeregisterPlugin(ctx, "mem", true); err != nil {
				t.Fatal(err)
			}
			code, errOut := runOn(ctx, e, "volume", "delete", "v", "--yes")
			if code != ExitConflict {
				t.Fatalf("volume delete of a claimed volume: exit %d, want %d: %s", code, ExitConflict, errOut)
			}
			return lastAdvised(errOut, "volctl volume detach"), e, errOut
		}},
		{"deregister refused for a claim, its --force advice", func(t *testing.T) (string, *engine.Engine, string) {
			ctx := context.Background()
			_, e, _ := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()))
			createSingleWriter(t, e, "v")
			claimUntilCleanup(t, e, "v", "a1")
			code, errOut := runOn(ctx, e, "volume", "deregister", "v", "--yes")
			if code != ExitConflict {
				t.Fatalf("volume deregister of a claimed volume: exit %d, want %d: %s", code, ExitConflict, errOut)
			}
			return lastAdvised(errOut, "volctl volume deregister"), e, errOut
		}},
		{"snapshot delete of a create forgotten while it waited", func(t *testing.T) (string, *engine.Engine, string) {
			ctx := context.Background()
			faults := csitest.NewFaults()
			socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())), csitest.WithFaults(faults))
			state := filepath.Join(t.TempDir(), "state")
			e := openEngine(t, state)
			if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
				t.Fatal(err)
			}
			createSingleWriter(t, e, "v")
			faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Code: codes.Unavailable, Times: 10})
			if _, err := e.CreateSnapshot(ctx, "v", "nightly", nil); err == nil || !strings.Contains(err.Error(), "stays recorded as being created") {
				t.Fatalf("snapshot create with every CreateSnapshot unanswered: %v; want it left pending", err)
			}
			faults.Clear()
			// Another volctl holds the volume's lock (flock on its file, as every volctl takes it).
			lock := flock.New(filepath.Join(state, "locks", "volume-v.lock"))
			if err := lock.Lock(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = lock.Unlock() })
			waiting := make(chan struct{})
			var once sync.Once
			wctx := engine.WithProgress(ctx, func(step string) {
				if strings.HasPrefix(step, "waiting for the lock on ") {
					once.Do(func() { close(waiting) })
				}
			})
			type result struct {
				code   int
				errOut string
			}
			done := make(chan result, 1)
			go func() {
				code, errOut := runOn(wctx, e, "volume", "snapshot", "delete", "mem", "nightly", "--yes")
				done <- result{code, errOut}
			}()
			select {
			case <-waiting:
			case r := <-done:
				t.Fatalf("the delete of the pending nightly did not wait for the volume's lock: exit %d: %s", r.code, r.errOut)
			case <-time.After(30 * time.Second):
				t.Fatalf("the delete of the pending nightly never waited for the volume's lock")
			}
			// ... and, holding it, forgets the create (as its deregister of nightly does).
			st, err := store.Open(ctx, state)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Update(ctx, func(tx *store.Tx) error { return tx.Snapshots().DeleteCreate("mem", "nightly") }); err != nil {
				t.Fatal(err)
			}
			_ = st.Close()
			_ = lock.Unlock()
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("the delete never returned")
			}
			if r.code == ExitOK {
				t.Fatalf("the delete of a create forgotten meanwhile: exit 0: %s", r.errOut)
			}
			return lastAdvised(r.errOut, "volctl volume snapshot list"), nil, r.errOut
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			advised, e, whole := tt.advise(t)
			if advised == "" {
				t.Fatalf("no command advised: %s", whole)
			}
			if err := parseAdvised(t, advised); err != nil {
				t.Fatalf("volctl advises `%s`, which volctl refuses: %v\nin: %s", advised, err, whole)
			}
			if e == nil {
				return
			}
			if code, out := runOn(context.Background(), e, shellquotetest.RunArgs(t, advised)...); code != ExitOK {
				t.Errorf("the advised `%s`, run as printed off a terminal: exit %d: %s\nadvised in: %s", advised, code, out, whole)
			}
		})
	}
}
