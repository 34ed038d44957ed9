package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A handover whose registration ended without Nomad saying how (volctl killed while it was on
// its way, or Nomad not answering it) leaves the mark unsettled: Nomad may have the volume or
// never get it, and `volctl nomad release` refuses Nomad's 404 until a registration is answered.
// A local claim's refusal then says that, and what works from there (the registration again,
// which settles it), rather than "Nomad claims it; after `nomad volume deregister`, release":
// Nomad may have nothing to deregister, and the release that advice ends with is refused.
func TestClaimOfAnInterruptedHandoverSaysWhatWorks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	to := HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: "default"}
	failed := errors.New("no answer")
	if _, err := h.e.HandOver(h.ctx, "db", to, false, func(context.Context, bool, VolumeInfo) (Registered, error) {
		return Registered{InFlight: true}, failed
	}); !errors.Is(err, failed) {
		t.Fatalf("HandOver: %v", err)
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("claim of a volume whose handover was interrupted: %v, want a conflict", err)
	}
	for _, want := range []string{"handed over to Nomad at http://127.0.0.1:4646", "without Nomad saying how", "NOMAD_ADDR=http://127.0.0.1:4646 NOMAD_NAMESPACE=default volctl nomad register db` (NOMAD_REGION unset)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim refused: %v\nwant it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "Nomad claims it") {
		t.Errorf("claim refused: %v\nsays Nomad claims it, which Nomad may not", err)
	}
	// Settled (Nomad answered a registration OK), the refusal is the usual one.
	if _, err := h.e.HandOver(h.ctx, "db", to, false, func(context.Context, bool, VolumeInfo) (Registered, error) {
		return Registered{OK: true, Index: 3}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err == nil || !strings.Contains(err.Error(), "Nomad claims it") {
		t.Errorf("claim of a handed-over volume: %v", err)
	}
}
