package engine

import (
	"context"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// TestGroupStopBesideAnotherSaysTheOtherReleasedItsClaims: two `group stop` of one group at
// once. The second lists the group's claims, waits for a volume the first is releasing, and
// finds the claim freed: it leaves it (releasePast), and said "it held no claims" of a group
// that held them a moment before. What another volctl released meanwhile is now named apart
// (GroupInfo.ReleasedMeanwhile): between the two stops, each claim is released by one and
// said so by each.
func TestGroupStopBesideAnotherSaysTheOtherReleasedItsClaims(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(1)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(1)); err != nil {
		t.Fatal(err)
	}
	first := h.otherProcess()
	var firstInfo, second GroupInfo
	firstErr, secondErr := h.whileHeld(csi.RPCNodeUnpublishVolume, "second stop", true,
		func() error { var err error; firstInfo, err = first.StopGroup(h.ctx, "db"); return err },
		func(ctx context.Context) error { var err error; second, err = h.e.StopGroup(ctx, "db"); return err })
	if firstErr != nil || secondErr != nil {
		t.Fatalf("stops: %v; %v", firstErr, secondErr)
	}
	if len(second.ReleasedMeanwhile) == 0 {
		t.Errorf("the second stop, which waited for the first's release: released %v, meanwhile %v; want the first's named as released meanwhile", second.Released, second.ReleasedMeanwhile)
	}
	if n := len(second.Released) + len(second.ReleasedMeanwhile); n != 2 {
		t.Errorf("the second stop accounts for %d claims (released %v, meanwhile %v); want the group's 2", n, second.Released, second.ReleasedMeanwhile)
	}
	if n := len(firstInfo.Released) + len(second.Released); n != 2 {
		t.Errorf("the stops released %d claims between them (%v, %v); want the group's 2, each once", n, firstInfo.Released, second.Released)
	}
	for _, m := range second.ReleasedMeanwhile {
		found := false
		for _, r := range firstInfo.Released {
			found = found || r == m
		}
		if !found {
			t.Errorf("the second stop says %+v was released meanwhile; the first did not release it (%v)", m, firstInfo.Released)
		}
	}
	if live := h.groupLiveClaims("db"); len(live) != 0 {
		t.Errorf("group db is stopped and still holds %d claim(s): %+v", len(live), live)
	}
}
