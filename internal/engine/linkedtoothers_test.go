package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// unpublishedThrough records, for each NodeUnpublishVolume the plugin is sent, what stood at
// its target path when it arrived ("link to <dest>" for a symlink): a plugin resolves the path
// as given, following any link there.
type unpublishedThrough struct {
	mu    sync.Mutex
	links []string
}

func (u *unpublishedThrough) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*csipb.NodeUnpublishVolumeRequest); ok {
		if dest, err := os.Readlink(r.GetTargetPath()); err == nil {
			u.mu.Lock()
			u.links = append(u.links, r.GetTargetPath()+" -> "+dest)
			u.mu.Unlock()
		}
	}
	return handler(ctx, req)
}

func (u *unpublishedThrough) followed() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.links...)
}

// linkAtASentPublishsTarget claims b's volume w (mounted by the hostpath plugin), then a's
// volume v with NodePublishVolume UNAVAILABLE (the claim node-staged, its publish recorded
// maybe sent), and puts at a's target a link to via's answer, which must lead to b's mounted
// target or a directory holding it. Two reconcile passes follow. Whatever they send, no
// NodeUnpublishVolume may reach the plugin while a link stands at a's target (the plugin would
// follow it and unmount b's live target), b's target stays mounted, and a's claim is rolled
// back by the first pass.
func linkAtASentPublishsTarget(t *testing.T, via func(t *testing.T, h *hostpathEngine, target, otherTarget string) string) {
	rec := &unpublishedThrough{}
	hostpathtest.RequireMount(t)
	h := newHostpathEngineAt(t, hostpathtest.MountDir(t), hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true},
		csitest.WithInterceptor(rec.interceptor))
	other := h.claimNew(t, "w", "b", "single-node-writer")
	sv := spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with NodePublishVolume unavailable succeeded")
	}
	h.faults.Clear()
	claims, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("v") })
	if err != nil || len(claims) != 1 || claims[0].Target != store.TargetNotAccepted {
		t.Fatalf("claims of v %+v, %v; want one, its publish recorded maybe sent", claims, err)
	}
	target := claims[0].TargetPath
	dest := via(t, h, target, other.TargetPath)
	if err := os.Symlink(dest, target); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(target)
	if r, err := filepath.EvalSymlinks(target); err != nil || !within(other.TargetPath, r) {
		t.Fatalf("the link resolves to %q, %v; want b's target %s or a directory holding it", r, err, other.TargetPath)
	}
	h.e.Reconcile(h.ctx) // reports the claim rolled back over the link
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Errorf("second reconcile: %+v, %v; want nothing to do (the claim settled)", rep.Problems, err)
	}
	if f := rec.followed(); len(f) != 0 {
		t.Errorf("NodeUnpublishVolume sent through a link that leads to alloc b's target %s: %v; want it removed unfollowed first", other.TargetPath, f)
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || !strings.Contains(string(mi), " "+other.TargetPath+" ") {
		t.Errorf("b's target %s is no longer mounted (%v): unmounted through a's link", other.TargetPath, err)
	}
	left, _ := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("v") })
	for _, c := range left {
		t.Errorf("a's claim after two passes: state %s, last error %q; want it rolled back, not stuck", c.State, c.LastError)
	}
	if _, err := h.e.Release(h.ctx, "w", "b"); err != nil {
		t.Errorf("release b: %v", err)
	}
}

// A link to a link (outside the state dir) to b's target.
func TestLinkThroughAHopToAnotherClaimsTargetIsNotFollowed(t *testing.T) {
	t.Parallel()
	linkAtASentPublishsTarget(t, func(t *testing.T, h *hostpathEngine, target, otherTarget string) string {
		hop := filepath.Join(t.TempDir(), "hop")
		if err := os.Symlink(otherTarget, hop); err != nil {
			t.Fatal(err)
		}
		return hop
	})
}

// A link into b's target through a second alias of the state dir (not the one volctl was given).
func TestLinkThroughAnotherAliasOfTheStateDirIsNotFollowed(t *testing.T) {
	t.Parallel()
	linkAtASentPublishsTarget(t, func(t *testing.T, h *hostpathEngine, target, otherTarget string) string {
		alias := filepath.Join(t.TempDir(), "alias")
		if err := os.Symlink(h.e.StateDir(), alias); err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(otherTarget, h.e.StateDir())
		if !ok {
			t.Fatalf("b's target %s not under the state dir %s", otherTarget, h.e.StateDir())
		}
		return alias + rest
	})
}

// A relative link to a name in the claim's own publish directory, itself a link to b's target.
func TestLinkThroughTheClaimsOwnDirectoryToAnotherClaimsTargetIsNotFollowed(t *testing.T) {
	t.Parallel()
	linkAtASentPublishsTarget(t, func(t *testing.T, h *hostpathEngine, target, otherTarget string) string {
		if err := os.Symlink(otherTarget, filepath.Join(filepath.Dir(target), "x")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(filepath.Join(filepath.Dir(target), "x")) })
		return "x"
	})
}

// A link to a directory holding b's target: the state dir itself, and a parent of it.
func TestLinkToADirectoryHoldingAnotherClaimsTargetIsNotFollowed(t *testing.T) {
	t.Parallel()
	for _, up := range []int{0, 1} {
		t.Run(map[int]string{0: "state-dir", 1: "its-parent"}[up], func(t *testing.T) {
			linkAtASentPublishsTarget(t, func(t *testing.T, h *hostpathEngine, target, otherTarget string) string {
				dir := h.e.StateDir()
				for range up {
					dir = filepath.Dir(dir)
				}
				return dir
			})
		})
	}
}
