package metrics

import (
	"context"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestMetricsCountAPublishedTargetCoveredOrLost: claim web-0's published target is covered by a
// tmpfs since its publish (the alloc writes into the tmpfs), then loses every mount (the host's
// disk). `volctl status` counts each in claims.covered and reconcile reports it; the metrics
// counted the claim published and nothing else, so no alert could see an alloc that no longer
// writes to its volume. Correct: volctl_claims_covered counts it, and is 0 once the volume is at
// the target again.
func TestMetricsCountAPublishedTargetCoveredOrLost(t *testing.T) {
	hostpathtest.RequireMount(t)
	m, e := fixture(t)
	ctx := context.Background()
	claims, err := e.Claims(ctx)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claims: %+v, %v", claims, err)
	}
	target := claims[0].TargetPath
	covered := func() float64 {
		t.Helper()
		v, ok := value(gather(t, m), "volctl_claims_covered", nil)
		if !ok {
			t.Fatal("no volctl_claims_covered series")
		}
		return v
	}
	if v := covered(); v != 0 {
		t.Fatalf("volctl_claims_covered with the target as published = %v, want 0", v)
	}
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	if v := covered(); v != 1 {
		t.Errorf("volctl_claims_covered with a tmpfs over claim web-0's target = %v, want 1", v)
	}
	if err := unix.Unmount(target, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(target, 0); err != nil { // the volume's own mount: the target lost
		t.Fatal(err)
	}
	if v := covered(); v != 1 {
		t.Errorf("volctl_claims_covered with nothing mounted at claim web-0's target = %v, want 1", v)
	}
	if _, err := e.Reconcile(ctx); err != nil {
		t.Fatalf("reconcile with the target lost: %v", err)
	}
	if v := covered(); v != 0 {
		t.Errorf("volctl_claims_covered once reconcile mounted the volume at the target again = %v, want 0", v)
	}
}
