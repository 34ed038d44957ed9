package engine

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A plugin that answers NodePublishVolume OK having bind-mounted the wrong thing at the target
// leaves a mount point there, which the mount-point check passes: the staging path's parent
// (every volume's staging directory of the plugin, on the state dir's own disk), the state dir
// itself, or another volume's staging (that volume's data, which the alloc would read and write
// beside its own claims). A target that is one of volctl's own directories, other than this
// volume's staging path, is refused naming what it is, and the claim rolled back, the plugin
// asked to unpublish it. Real mounts, as root.
func TestTargetBoundFromVolctlsOwnDirectoriesIsRefused(t *testing.T) {
	t.Parallel()
	ofStateDir := func(path string) string { return "a bind mount of " + path + ", a directory of volctl's state dir" }
	for _, tc := range []struct {
		name string
		from func(dir, staging string) string // what the plugin mounts at v's target
		want func(dir string) string
		// stage: the plugin stages v from there, and publishes from the staging path (the
		// target is the staging path, and the wrong bind too)
		stage bool
	}{
		{name: "staging parent", from: func(_, staging string) string { return filepath.Dir(staging) },
			want: func(dir string) string { return ofStateDir(filepath.Join(dir, "staging", "mem")) }},
		{name: "state dir", from: func(dir, _ string) string { return dir },
			want: func(dir string) string { return ofStateDir(dir) }},
		{name: "other volume", from: func(_, staging string) string { return filepath.Join(filepath.Dir(staging), "w") },
			want: func(dir string) string {
				return `volume "w"'s staging path ` + stagingPath(dir, "mem", "w") + " bind-mounted"
			}},
		{name: "staged from the staging parent", stage: true, from: func(_, staging string) string { return filepath.Dir(staging) },
			want: func(dir string) string { return ofStateDir(filepath.Join(dir, "staging", "mem")) }},
	} {
		for _, lookup := range publishLookups {
			t.Run(tc.name+"/"+lookup.name, func(t *testing.T) {
				var dir string
				h := kernelHarness(t, func(c *csitest.MemConfig) {
					if tc.stage {
						stageVFrom(c, func(staging string) string { return tc.from(dir, staging) })
						return
					}
					c.PublishFrom = func(staging, target string) string {
						if strings.Contains(target, "/publish/a/v/") {
							return tc.from(dir, staging)
						}
						return ""
					}
				})
				dir = h.dir
				lookup.use(h)
				h.create(volume("w"))
				h.create(volume("v"))
				w := h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
				if err := os.WriteFile(filepath.Join(w.TargetPath, "ws-data"), []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
				h.mem.ResetCalls()

				cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
				target := publishPath(h.dir, "a", "v", false, spec.FileSystem, spec.SingleNodeWriter)
				if err == nil {
					entries, _ := os.ReadDir(cl.TargetPath)
					t.Fatalf("claim published at %s, a bind of %s (what the alloc sees there: %v), want it refused", cl.TargetPath, tc.from(dir, stagingPath(dir, "mem", "v")), entries)
				}
				want := `plugin "mem" answered OK for volume "v", but the target ` + target + " is " + tc.want(h.dir)
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rolled back") {
					t.Fatalf("claim = %v\nwant an error saying %s, and the claim rolled back", err, want)
				}
				lookup.check(t, h, false)
				if live := h.liveClaims("v"); len(live) != 0 {
					t.Fatalf("claims after the refusal = %+v, want none", live)
				}
				if got := h.mem.CallCount(csi.RPCNodeUnpublishVolume); got != 1 {
					t.Errorf("NodeUnpublishVolume sent %d times, want once (the plugin asked to remove what it made)", got)
				}
				if _, err := os.Stat(filepath.Join(w.TargetPath, "ws-data")); err != nil {
					t.Errorf("volume w's claim after v's refusal: %v", err)
				}
				h.release("w", "b")
			})
		}
	}
}

// A plugin that fails slowly, answering a retryable code just before volctl's own timeout
// (its backend call given the deadline gRPC passed on, which runs out first, answered as its
// own DEADLINE_EXCEEDED; or UNAVAILABLE after as long), was retried as one failing at once:
// each of a command's attempts took a whole timeout, 4 x 2 min per RPC for a command that
// promises to retry "within seconds", and the agent's 6 attempts held its pass 12 min per RPC.
// An RPC is tried again only while the time its attempts took, and one more as long as the last,
// fit within its timeout: the claim is left for reconcile after about one timeout, and its
// error says why it was not tried again. A plugin failing at once is still retried (the retry
// tests in timeout_test.go).
//
// The plugin's slowness is the engine's clock's: each faulted answer, sent at once, advances it
// by 7/10 of the timeout (slowClock). A real delay that close to the timeout ran past it on a
// loaded machine (load 30-40, chaos15), and the failure was then volctl's own timeout, which
// this test is not about.
func TestSlowRetryableFailureIsNotRetriedPastTheTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second
	for _, code := range []codes.Code{codes.DeadlineExceeded, codes.Unavailable} {
		for _, rpc := range []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
			t.Run(code.String()+"/"+rpc, func(t *testing.T) {
				h := newHarness(t, nil)
				h.create(volume("v"))
				clock := &slowClock{rpc: rpc, step: timeout * 7 / 10}
				h.open(Config{
					Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: timeout},
					Retry:    RetryPolicy{Attempts: DefaultRetry.Attempts, Base: time.Millisecond, Max: 2 * time.Millisecond},
					Now:      clock.now, ObserveRPC: clock.observe,
				})
				h.faults.Inject(rpc, csitest.Fault{Code: code})
				clock.slow.Store(true)
				start := clock.now()
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
				took := clock.now().Sub(start)
				if n := h.callsAfterIdle(t, rpc); n != 1 {
					t.Fatalf("%s sent %d times in %s, each answered %s after %s: want once, the attempts bounded by the %s timeout",
						rpc, n, took.Round(time.Millisecond), code, timeout*7/10, timeout)
				}
				if csi.CodeOf(err) != code || !strings.Contains(err.Error(), "not tried again") || !strings.Contains(err.Error(), "for `volctl reconcile`") {
					t.Fatalf("claim error = %v\nwant the plugin's %s, saying why it was not tried again and that the claim is left for reconcile", err, code)
				}
				live := h.liveClaims("v")
				if len(live) != 1 || !live[0].NeedsReconcile || live[0].LastRPC != rpc || live[0].State == store.ClaimPublished {
					t.Fatalf("claim after the slow failure = %+v, want it left for reconcile", live)
				}
				h.faults.Clear()
				clock.slow.Store(false)
				if rep, err := h.e.Reconcile(h.ctx); err != nil {
					t.Fatalf("reconcile after the plugin recovered: %v %+v", err, rep.Problems)
				}
			})
		}
	}
}

// slowClock is an engine clock (Config.Now) that each answer to rpc, while slow is set,
// advances by step (Config.ObserveRPC): a plugin that takes step to answer rpc, as the engine
// measures it, whatever the machine's load.
type slowClock struct {
	rpc  string
	step time.Duration
	slow atomic.Bool
	skew atomic.Int64
}

func (c *slowClock) now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

func (c *slowClock) observe(_, rpc, _ string, _ time.Duration) {
	if c.slow.Load() && rpc == c.rpc {
		c.skew.Add(int64(c.step))
	}
}

// A claim whose NodeStageVolume failed for good (INVALID_ARGUMENT: the plugin did not stage) is
// rolled back, and the rollback sends NodeUnstageVolume for the staging it recorded as intended
// (it cannot know the plugin did nothing). A plugin that answers that with FAILED_PRECONDITION
// ("not staged"), which CSI's NodeUnstageVolume never answers (not staged is OK; an unknown
// volume NOT_FOUND), left the rollback stuck: the claim held the volume, releasing, every
// reconcile pass sending the same NodeUnstageVolume to the same answer, until a forced detach.
// A staging never confirmed, so answered, gets the mount table's verdict, as one the plugin
// cannot be asked to undo: nothing mounted there, it is forgotten and the claim freed;
// something mounted, it stays, said. A staging the plugin confirmed is not so forgotten: its
// FAILED_PRECONDITION stays an error, the release left for reconcile.
func TestUnstageOfAStagingNeverConfirmedAnsweredFailedPrecondition(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCNodeStageVolume, codes.InvalidArgument)
	h.faults.FailAlways(csi.RPCNodeUnstageVolume, codes.FailedPrecondition)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if csi.CodeOf(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "rolled back") || strings.Contains(err.Error(), "rolling the claim back also failed") {
		t.Fatalf("claim = %v, want NodeStageVolume's InvalidArgument, rolled back", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the rollback = %+v, want none: the staging was never confirmed and nothing is mounted there", live)
	}

	// Something mounted at the staging path (the fake table: a staging directory holding
	// anything): the staging stays recorded, the claim left for reconcile, saying so.
	staging := stagingPath(h.dir, "mem", "v")
	if err := os.WriteFile(filepath.Join(staging, "mounted"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	if err == nil || !strings.Contains(err.Error(), "staging at "+staging+" is still mounted") || !strings.Contains(err.Error(), "never confirmed") {
		t.Fatalf("claim over a mounted staging = %v, want the rollback to say the staging is still mounted", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].NeedsReconcile {
		t.Fatalf("claims after the refused rollback = %+v, want b's left for reconcile", live)
	}
	if err := os.Remove(filepath.Join(staging, "mounted")); err != nil {
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once nothing is mounted: %v %+v", err, rep.Problems)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v, want none", live)
	}

	// Confirmed: the answer stays an error.
	h.faults.Clear(csi.RPCNodeStageVolume)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "c"})
	if _, err := h.e.Release(h.ctx, "v", "c"); csi.CodeOf(err) != codes.FailedPrecondition {
		t.Fatalf("release of a confirmed staging answered FailedPrecondition = %v, want that error", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing {
		t.Fatalf("claims after the failed release = %+v, want c's left releasing", live)
	}
}
