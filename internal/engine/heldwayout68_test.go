package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A plain `volume claim db --alloc web[0]` (writer) holds the alloc's claim; `group run` of group
// "web" (whose alloc web[0] is) asks db read-only. heldWayOut picked its advice from the
// request's group, not from the claim's: it advised `volctl group stop web`, which releases the
// group's claims only, and this one is no group's. Run as advised, the group run was refused
// again, the same advice. freeCommand (beside it) picks by the held claim's group. Found by
// helper review68 (a review of that round's own change).
func TestHeldWayOutNamesTheHeldClaimsRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.MultiNodeMultiWriter), capab(spec.MultiNodeReaderOnly)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web[0]", AccessMode: spec.MultiNodeMultiWriter})
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "db", ReadOnly: true,
			AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem}}}
	_, err := h.e.RunGroup(h.ctx, g)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("group run over a plain claim in another mode = %v; want a conflict", err)
	}
	t.Logf("refusal: %v", err)
	if strings.Contains(err.Error(), "volctl group stop web") {
		if _, serr := h.e.StopGroup(h.ctx, "web"); serr != nil {
			t.Logf("the advised group stop: %v", serr)
		}
		_, again := h.e.RunGroup(h.ctx, g)
		t.Errorf("the refusal advised `volctl group stop web` for a claim no group holds (made by `volume claim`); "+
			"run as advised, the group run is refused again: %v", again)
	}
	if !strings.Contains(err.Error(), "volctl volume release db --alloc 'web[0]'") {
		t.Errorf("refusal %q; want it to name the held claim's release", err)
	}
}

// The other way round: group web's claim for web[0] (writer) is held, and a plain `volume claim`
// of web[0] asks read-only. heldWayOut advised `volume release`, where every other refusal naming
// a group's claim (freeCommand) advises the group's stop: a release of the group's alloc leaves
// the group running without its volume. Found by helper review68.
func TestHeldWayOutOfAGroupsClaimNamesTheGroupsStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.MultiNodeMultiWriter), capab(spec.MultiNodeReaderOnly)))
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "db",
			AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web[0]", AccessMode: spec.MultiNodeReaderOnly, ReadOnly: true})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("claim again in another mode = %v; want a conflict", err)
	}
	if want := freeCommand(h.liveClaims("db")[0]); !strings.Contains(err.Error(), want) {
		t.Errorf("claim again of group web's claim in another mode = %q; want it to name %s, as freeCommand does for a group's claim", err, want)
	}
}
