package engine

import (
	"errors"
	"strings"
	"testing"
)

// A claim for an alloc whose name holds a character that cannot be seen (here a right-to-left
// override, which prints "web-0" as "web-\u202e0" reversed) is refused before anything is
// recorded, naming the code point: otherwise its claim reads, in every table, as another
// alloc's (spec.ValidateNewID). A volume an older volctl stored under such an ID (it read specs
// by ValidateID's rules alone) is still claimed, released and deleted by that ID: only what
// volctl makes anew is held to the stricter rule.
func TestInvisibleCharactersOnlyInNewIDsAreRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-\u202e0"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "U+202E") {
		t.Fatalf("claim for alloc %+q: %v, want it refused as invalid, naming U+202E", "web-\u202e0", err)
	}
	if live := h.liveClaims("db"); len(live) != 0 {
		t.Errorf("the refused claim left claims: %+v", live)
	}

	const old = "d\u200bb" // stored by an older volctl
	h.create(volume(old))
	h.claim(ClaimRequest{VolumeID: old, Alloc: "web-0"})
	if res, err := h.e.Release(h.ctx, old, "web-0"); err != nil || !res.Released {
		t.Fatalf("release of volume %+q: released %v, %v", old, res.Released, err)
	}
	if err := h.e.DeleteVolume(h.ctx, old); err != nil {
		t.Fatalf("delete of volume %+q: %v", old, err)
	}
}
