package agent

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
)

// lostMounts stands in for the kernel's mount table with a plugin that mounts nothing: every
// target directory that exists counts as mounted (the in-memory plugin makes it at
// NodePublishVolume and removes it at NodeUnpublishVolume), and every staging directory the
// plugin has a volume staged at (volctl keeps the directory while its volume is registered, so
// its existence says nothing), until set(true) takes them all away (a reboot) and set(false)
// brings back what there is then: the stagings, and the targets once a NodePublishVolume was
// sent since the reboot (a reboot leaves the target directories, unmounted; since round 77 a
// restore refuses to publish over a target something was mounted at since it found it
// unmounted, which the targets' coming back by themselves was).
type lostMounts struct {
	mu   sync.Mutex
	lost bool
	// rebooted: set(true) was called, when the plugin had had rebootPublishes NodePublishVolumes.
	rebooted        bool
	rebootPublishes int
	f               *fixture // its plugin, once claimOnMem made it
}

// targetsBack says whether the targets that exist count as mounted: not lost, and published
// again since the last reboot, if any. The caller holds m.mu.
func (m *lostMounts) targetsBack() bool {
	return !m.lost && (!m.rebooted || m.f.mem.CallCount(csi.RPCNodePublishVolume) > m.rebootPublishes)
}

func (m *lostMounts) MountsUnder(dir string) (map[string]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]bool{}
	if m.lost {
		return out, nil
	}
	matches, err := filepath.Glob(filepath.Join(dir, "publish", "*", "*", "*"))
	if err != nil {
		return nil, err
	}
	for _, p := range matches {
		if m.targetsBack() {
			out[p] = true
		}
	}
	if mem := m.f.mem; mem != nil {
		for _, v := range mem.Volumes() {
			if p, ok := mem.StagingPath(v.ID); ok {
				out[p] = true
			}
		}
	}
	return out, nil
}

// Mounted, asked right after NodePublishVolume: a target that exists (the plugin made it) is
// mounted, read-only when it is a read claim's ("ro-..."), as a plugin that honours readonly
// mounts it.
func (m *lostMounts) Mounted(root, path string) (engine.MountPoint, error) {
	if _, err := os.Lstat(path); err != nil {
		return engine.MountPoint{}, err
	}
	m.mu.Lock()
	back := !m.rebooted || m.f.mem.CallCount(csi.RPCNodePublishVolume) > m.rebootPublishes
	m.mu.Unlock()
	return engine.MountPoint{Mounted: back, ReadOnly: strings.HasPrefix(filepath.Base(path), "ro-")}, nil
}

func (m *lostMounts) set(lost bool) {
	m.mu.Lock()
	m.lost = lost
	if lost {
		m.rebooted, m.rebootPublishes = true, m.f.mem.CallCount(csi.RPCNodePublishVolume)
	}
	m.mu.Unlock()
}

// The agent never frees a claim whose restore fails, whatever the error: it keeps it held,
// degraded, re-drives it with a growing, capped wait (not only on the reconcile timer), and
// restores it once the plugin is well.
func TestAgentHoldsADegradedClaimAndRedrivesItWithBackoff(t *testing.T) {
	f := newFixture(t)
	mounts := &lostMounts{f: f}
	e, err := engine.Open(f.ctx, engine.Config{StateDir: f.dir, Mounts: mounts,
		Retry: engine.RetryPolicy{Attempts: 2, Base: time.Millisecond, Max: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	f.e = e

	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "n1"
	faults := f.claimOnMem(cfg)

	// A reboot, and a plugin that fails every NodeStageVolume with a final code. The reconcile
	// timer is an hour away: only the start-up pass and the re-drives can send anything.
	mounts.set(true)
	before := faults.Calls(csi.RPCNodeStageVolume) // the claim's own
	faults.FailAlways(csi.RPCNodeStageVolume, codes.Internal)
	s := testSettings
	s.ReconcileInterval, s.BackoffMin, s.BackoffMax = time.Hour, 10*time.Millisecond, 80*time.Millisecond
	stop := f.startAgent(s)
	waitFor(t, "the agent to re-drive the failing restore several times", func() bool {
		if cs, err := f.e.Claims(f.ctx); err == nil && len(cs) == 0 {
			t.Fatalf("the agent freed the claim after %d failed restores", faults.Calls(csi.RPCNodeStageVolume)-before)
		}
		// Six passes: five of them scheduled by the re-drive, logged before the sixth began.
		return faults.Calls(csi.RPCNodeStageVolume)-before >= 6
	})
	claims, err := f.e.Claims(f.ctx)
	if err != nil || len(claims) != 1 || claims[0].Alloc != "web-0" || !claims[0].Degraded || claims[0].LastCode != "Internal" {
		t.Fatalf("claims while the plugin fails = %+v, %v; want web-0's claim held, degraded, with its error", claims, err)
	}
	_, err = f.e.Claim(f.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-1"})
	if !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), `alloc "web-0"`) {
		t.Fatalf("a second writer while the first is degraded = %v; want a conflict naming web-0", err)
	}

	// The waits between re-drives grow and stay under the cap.
	var waits []time.Duration
	for _, m := range regexp.MustCompile(`claims held for a re-drive.* retry_in=(\S+)`).FindAllStringSubmatch(f.logs.String(), -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, d)
	}
	if len(waits) < 5 || waits[0] != s.BackoffMin {
		t.Fatalf("re-drive waits = %v; want at least 5, starting at %s\n%s", waits, s.BackoffMin, f.logs)
	}
	for i, w := range waits {
		if w > s.BackoffMax || (i > 0 && w < waits[i-1]) {
			t.Fatalf("re-drive waits = %v; want them growing, capped at %s", waits, s.BackoffMax)
		}
	}
	if waits[len(waits)-1] != s.BackoffMax {
		t.Fatalf("re-drive waits = %v; want them to reach the cap %s", waits, s.BackoffMax)
	}

	// Healed: the next re-drive restores the claim.
	mounts.set(false)
	faults.Clear()
	waitFor(t, "the claim to be restored", func() bool {
		cs, err := f.e.Claims(f.ctx)
		return err == nil && len(cs) == 1 && cs[0].AtRest() && !cs[0].Degraded
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
