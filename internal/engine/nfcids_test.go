package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Two IDs an older volctl stored that differ only in normalisation (combining marks in either
// order, neither in NFC) both read as the NFC one typed: a command naming it must refuse, naming
// both as stored, rather than act on whichever the table lists first. An ID stored exactly as
// typed is still the one meant, whatever else normalises alike.
func TestStoredIDsNormalisingAlikeAreRefused(t *testing.T) {
	const nfc, one, two = "v\u1ead", "va\u0323\u0302", "va\u0302\u0323"
	h := newHarness(t, nil)
	h.create(volume(one))
	h.create(volume(two))
	_, err := h.e.Volume(h.ctx, nfc)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("%+q", one)) ||
		!strings.Contains(fmt.Sprint(err), fmt.Sprintf("%+q", two)) {
		t.Errorf("volume %+q with %+q and %+q stored: %v, want a refusal naming both", nfc, one, two, err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: nfc, Alloc: "a"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("claim of %+q with %+q and %+q stored: %v, want a refusal", nfc, one, two, err)
	}
	if live := append(h.liveClaims(one), h.liveClaims(two)...); len(live) != 0 {
		t.Errorf("after the refused claim, live claims: %+v", live)
	}
	h.create(volume(nfc))
	if v, err := h.e.Volume(h.ctx, nfc); err != nil || v.ID != nfc {
		t.Errorf("volume %+q, stored as typed beside %+q and %+q: %+q, %v", nfc, one, two, v.ID, err)
	}
}
