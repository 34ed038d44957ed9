package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// `volctl volume deregister V --force` of a volume handed over to Nomad with --force past a
// live local claim: the deregistration is refused (handed over: Nomad claims it, not volctl),
// as it must be, but only after --force has released the local claim through the plugin
// (NodeUnpublishVolume/NodeUnstageVolume sent, the alloc's mount gone). The plain deregister's
// refusal names the claim first and advises exactly that `--force --yes` run, so following the
// advice unmounts the alloc's data and deregisters nothing. Correct: a refusal the record
// decides (the handover mark) comes before anything is released, in the plain deregister's
// refusal too; the claim stays live and nothing is sent to the plugin.
// Found by helper review77 (register).
func TestForcedDeregisterOfAHandedOverVolumeReleasesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	h.create(volume("db", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if _, err := h.e.HandOver(h.ctx, "db", HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced handover past the local claim: %v", err)
	}
	unpublishes := h.mem.CallCount(csi.RPCNodeUnpublishVolume)

	// The plain deregister is refused for the claim first, and advises the --force run below.
	_, err := h.e.DeregisterVolume(h.ctx, "db", false)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("deregister of a handed-over volume with a live claim: %v, want a conflict", err)
	}
	if !strings.Contains(err.Error(), "handed over to Nomad") || strings.Contains(err.Error(), "--force") {
		t.Errorf("the plain deregister of a handed-over volume with a live claim says %v; want the handover said, and no --force advised (a handed-over volume refuses it)", err)
	}

	var released []ClaimInfo
	released, _, err = h.e.DeregisterVolumeReleasing(h.ctx, "db", true)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "handed over to Nomad") {
		t.Fatalf("deregister --force of a handed-over volume: %v, want a conflict saying it is handed over", err)
	}
	if len(released) > 0 {
		t.Errorf("the refused deregister --force released %d claim(s) first (%+v): a refusal the handover mark decides should release nothing", len(released), released)
	}
	if n := h.mem.CallCount(csi.RPCNodeUnpublishVolume) - unpublishes; n > 0 {
		t.Errorf("the refused deregister --force sent NodeUnpublishVolume %d time(s): alloc web-0's mount is gone though nothing was deregistered", n)
	}
	if v := h.volumeInfo("db"); len(v.Claims) != 1 {
		t.Errorf("volume db has %d claim(s) after the refused deregister --force, want alloc web-0's still live", len(v.Claims))
	}
}

// `volctl volume deregister V` of a volume still owed a NodeExpandVolume (its plugin grew it
// while no claim held it; the file system grows at its next publish here) forgot that debt
// without a word: no warning, an event saying only "deregistered". Registered again by its
// external ID, the next claim published the file system at the old size and sent no
// NodeExpandVolume. A handover refuses the same debt; the deregistration, which forgets it for
// good, is refused so too, naming the claim and release that pay it (followed here: the
// NodeExpandVolume is sent and the deregister goes), and with --force it is forgotten, said.
// Found by helper review77 (register).
func TestDeregisterOfAVolumeOwedANodeExpansionSaysItIsForgotten(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.create(volume("w"))
	for _, id := range []string{"v", "w"} {
		if _, err := h.e.ExpandVolume(h.ctx, id, 4*mib, 0); err != nil {
			t.Fatalf("expand %s: %v", id, err)
		}
		if got := h.owed(id); got != 4*mib {
			t.Fatalf("node expansion owed of %s = %d, want %d (precondition)", id, got, 4*mib)
		}
	}

	_, err := h.e.DeregisterVolume(h.ctx, "v", false)
	claim, release := "`volctl volume claim v --alloc expand`", "`volctl volume release v --alloc expand`"
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "NodeExpandVolume") || !strings.Contains(err.Error(), claim) || !strings.Contains(err.Error(), release) {
		t.Fatalf("deregister of a volume owed a NodeExpandVolume: %v; want a conflict naming the debt, %s and %s", err, claim, release)
	}
	// The advice followed.
	expands := h.mem.CallCount(csi.RPCNodeExpandVolume)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "expand"})
	if _, err := h.e.Release(h.ctx, "v", "expand"); err != nil {
		t.Fatalf("release as advised: %v", err)
	}
	if h.mem.CallCount(csi.RPCNodeExpandVolume) == expands || h.owed("v") != 0 {
		t.Errorf("the advised claim sent no NodeExpandVolume (owed now %d)", h.owed("v"))
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
		t.Errorf("deregister once the advised claim paid the debt: %v", err)
	}

	// --force forgets it, and says so.
	warnings, err := h.e.DeregisterVolume(h.ctx, "w", true)
	if err != nil || !strings.Contains(strings.Join(warnings, "\n"), "NodeExpandVolume") {
		t.Errorf("deregister --force of a volume owed a NodeExpandVolume: %v, warnings %q; want it forgotten, said", err, warnings)
	}
}
