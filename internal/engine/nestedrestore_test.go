package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/store"
)

// TestAFailedOuterRestoreLeavesTheInnerForTheNextPass: after a reboot, the outer volume of a
// nested pair (data at app, logs at app/logs) cannot be staged in a pass (Unavailable through
// its retries). The pass must not bind logs on app's bare directory: data's bind would then be
// refused every pass after (logs mounted below it, which it would hide). It leaves logs for the
// next pass, saying why, and once the plugin answers, the next pass restores both, logs on
// data's directory. Real mounts, as root.
func TestAFailedOuterRestoreLeavesTheInnerForTheNextPass(t *testing.T) {
	t.Parallel()
	for _, taken := range []bool{false, true} {
		name := "inner published"
		if taken {
			// The inner claim left taken by a killed group run: driven by the pass after the
			// restores of the claims it lies below (bindLater).
			name = "inner taken"
		}
		t.Run(name, func(t *testing.T) {
			h := newHostpathEngine(t)
			dests := hostpathtest.MountDir(t)
			g := nestedGroup(t, h, dests, true)
			if _, err := h.e.RunGroup(h.ctx, g); err != nil {
				t.Fatal(err)
			}
			rebootNested(t, h, dests)
			if taken {
				setClaimState(t, h, "logs", "app[0]", store.ClaimTaken)
			}
			h.faults.FailNext(csi.RPCNodeStageVolume, codes.Unavailable, fastRetry.Attempts)
			rep, err := h.e.Reconcile(h.ctx)
			if err == nil {
				t.Fatalf("pass 1, data's staging failing: no error, %+v", rep)
			}
			if m := mountsUnder(t, filepath.Join(dests, "app")); len(m) != 0 {
				t.Errorf("pass 1 bound %v with data's volume_mount at %s/app not bound: the inner bind is on the bare directory", m, dests)
			}
			said := false
			for _, p := range rep.Problems {
				said = said || p.VolumeID == "logs" && strings.Contains(p.Message, filepath.Join(dests, "app")+",")
			}
			if !said {
				t.Errorf("pass 1's problems %+v: want logs' naming data's unbound destination %s/app", rep.Problems, dests)
			}
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("pass 2 after the plugin came back: %v (%+v)", err, rep.Problems)
			}
			checkNestedBound(t, h, dests)
			if _, err := h.e.StopGroup(h.ctx, "app"); err != nil {
				t.Errorf("stop: %v", err)
			}
			if m := mountsUnder(t, dests); len(m) != 0 {
				t.Errorf("mounted after the stop: %v", m)
			}
		})
	}
}

// setClaimState sets alloc's claim of volume to state in the store, as a command cut short
// leaves it.
func setClaimState(t *testing.T, h *hostpathEngine, volume, alloc string, state store.ClaimState) {
	t.Helper()
	if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		all, err := tx.Claims().ListAll()
		if err != nil {
			return err
		}
		for _, c := range all {
			if c.VolumeID == volume && c.Alloc == alloc {
				c.State = state
				return tx.Claims().Update(&c)
			}
		}
		return store.ErrNotFound
	}); err != nil {
		t.Fatal(err)
	}
}

// rebootNested loses every mount of the nested group: its binds and the state dir's.
func rebootNested(t *testing.T, h *hostpathEngine, dests string) {
	t.Helper()
	for _, d := range []string{dests, h.state} {
		if err := hostpath.UnmountAll(d); err != nil {
			t.Fatal(err)
		}
	}
}

// checkNestedBound checks that what is written at app/logs lands in the logs volume, and what
// is written at app in the data volume.
func checkNestedBound(t *testing.T, h *hostpathEngine, dests string) {
	t.Helper()
	for _, c := range []struct{ vol, at string }{{"data", "app"}, {"logs", "app/logs"}} {
		name := c.vol + ".txt"
		if err := os.WriteFile(filepath.Join(dests, c.at, name), []byte(c.vol), 0o644); err != nil {
			t.Fatalf("write at %s: %v", c.at, err)
		}
		info, err := h.e.ClaimInfo(h.ctx, c.vol, "app[0]")
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(info.TargetPath, name)); err != nil || string(b) != c.vol {
			t.Errorf("written at %s/%s, read through the %s volume's target: %q, %v; want it there", dests, c.at, c.vol, b, err)
		}
	}
}
