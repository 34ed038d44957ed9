package tui

import (
	"context"
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestReleaseOfADecomposedAllocRefusesTheClaimMadeSinceInNFC: the release question is about one
// claim (action.asked), and a confirmed release is refused when the alloc's claim is another,
// released and made again since (action.changed). The engine's release finds the alloc's claim
// by its name in NFC too (sameAlloc): a claim an older volctl stored decomposed ("cafe\u0301-0"),
// released meanwhile and made again by today's command line, which reads typed IDs in NFC
// ("café-0"), is the alloc's claim to the engine. action.changed compared the names byte for
// byte, saw no claim of the alloc, and let the release through: the engine released the claim
// made since, which the question never named. Found by helper review71.
func TestReleaseOfADecomposedAllocRefusesTheClaimMadeSinceInNFC(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	const decomposed, composed = "cafe\u0301-0", "caf\u00e9-0"
	// As an older volctl stored it: the alloc's name as typed, decomposed.
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: decomposed}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, e, Options{})
	h.keys("2", "x")
	if h.m.dialog == nil {
		t.Fatalf("x on the claim opened no question; status %q", h.m.status.text)
	}
	asked := h.m.dialog.a.asked
	// While the question is open: another terminal releases the claim, and the alloc claims the
	// volume again through today's command line (its name read in NFC).
	if _, err := e.Release(ctx, "db", decomposed); err != nil {
		t.Fatal(err)
	}
	made, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: composed})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(asked, made.ID) {
		t.Fatalf("the claim made since has the asked ID %d", made.ID)
	}
	h.keys("tab", "enter")
	cs, err := e.Claims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(cs, func(c engine.ClaimInfo) bool { return c.ID == made.ID }) {
		t.Errorf("the release confirmed of claim %v freed claim %d of %q, made after the question, which it never named; status %q",
			asked, made.ID, composed, h.m.status.text)
	}
}
