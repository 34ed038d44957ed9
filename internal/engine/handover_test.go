package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A volume handed over to Nomad is claimed by Nomad only: a local claim is refused, naming the
// Nomad address, until the volume is taken back.
func TestHandedOverVolumeRefusesLocalClaims(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	to := HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: "default"}
	if _, err := h.e.HandOver(h.ctx, "db", to, false, nil); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "handed over to Nomad at http://127.0.0.1:4646") ||
		!strings.Contains(err.Error(), "volctl nomad release db") {
		t.Fatalf("claim of a handed-over volume: %v, want a conflict naming the Nomad address and how to take it back", err)
	}
	if got := h.liveClaims("db"); len(got) != 0 {
		t.Fatalf("refused claim left %d live claim(s)", len(got))
	}
	if n := h.faults.Calls("NodePublishVolume"); n != 0 {
		t.Fatalf("refused claim sent NodePublishVolume %d time(s)", n)
	}
	if r, err := h.e.TakeBack(h.ctx, "db", because("deregistered from Nomad"), nil); err != nil || !r.Had {
		t.Fatalf("take back: had=%v err=%v", r.Had, err)
	}
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if r, err := h.e.TakeBack(h.ctx, "db", because("again"), nil); err != nil || r.Had {
		t.Fatalf("second take back: had=%v err=%v, want no mark and no error", r.Had, err)
	}
}

// A volume with live local claims is not handed over unless forced; the refusal names the claims.
// (Its plugin attaches nothing: claims holding an attachment are refused even forced,
// TestForcedHandoverRefusesClaimsHoldingAnAttachment.)
func TestHandOverRefusesLiveClaimsUnlessForced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	h.create(volume("db", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	_, err := h.e.HandOver(h.ctx, "db", to, false, nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "web-0"`) {
		t.Fatalf("hand over with a live claim: %v, want a conflict naming alloc web-0", err)
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 0 {
		t.Fatalf("refused handover left a mark: %+v", hs)
	}
	info, err := h.e.HandOver(h.ctx, "db", to, true, nil)
	if err != nil || !info.Forced {
		t.Fatalf("forced hand over: %+v, %v", info, err)
	}
	// The existing claim may still be released; a new one is refused.
	h.release("db", "web-0")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-1"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim after forced handover: %v, want a conflict", err)
	}
}

// Claims racing a handover: whichever commits first wins, and the two never both hold the
// volume — every claim that succeeded was admitted before the mark, and the handover then saw it.
func TestHandOverAndClaimNeverBothWin(t *testing.T) {
	t.Parallel()
	for i := 0; i < 10; i++ {
		h := newHarness(t, nil)
		h.create(volume("db", capab(spec.SingleNodeWriter)))
		var wg sync.WaitGroup
		var claimErr, handErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, claimErr = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		}()
		go func() {
			defer wg.Done()
			_, handErr = h.e.HandOver(h.ctx, "db", HandoverTarget{Address: "http://127.0.0.1:4646"}, false, nil)
		}()
		wg.Wait()
		if (claimErr == nil) == (handErr == nil) {
			t.Fatalf("round %d: claim err=%v, handover err=%v: exactly one must win", i, claimErr, handErr)
		}
	}
}

// A handed-over volume is Nomad's: volctl neither forgets it nor deletes its storage until it
// is taken back, and says so.
func TestHandedOverVolumeIsNotDeregisteredOrDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	if _, err := h.e.HandOver(h.ctx, "db", HandoverTarget{Address: "http://127.0.0.1:4646"}, false, nil); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"deregister":         func() error { _, err := h.e.DeregisterVolume(h.ctx, "db", false); return err },
		"deregister --force": func() error { _, err := h.e.DeregisterVolume(h.ctx, "db", true); return err },
		"delete":             func() error { return h.e.DeleteVolume(h.ctx, "db") },
	} {
		err := op()
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "handed over to Nomad at http://127.0.0.1:4646") {
			t.Errorf("%s of a handed-over volume: %v, want a conflict naming the Nomad address", name, err)
		}
	}
	if n := h.faults.Calls("DeleteVolume"); n != 0 {
		t.Errorf("DeleteVolume sent %d time(s) for a volume Nomad has", n)
	}
	if _, err := h.e.Volume(h.ctx, "db"); err != nil {
		t.Fatalf("the volume is gone: %v", err)
	}
}

// A volume handed over to one Nomad cluster is not handed to another: that would make two
// orchestrators. Handing it to the same one again is a re-registration.
func TestHandOverToASecondClusterRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	a := HandoverTarget{Address: "http://nomad-a:4646"}
	if _, err := h.e.HandOver(h.ctx, "db", a, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.HandOver(h.ctx, "db", a, false, nil); err != nil {
		t.Fatalf("handing over to the same cluster again: %v", err)
	}
	for _, force := range []bool{false, true} {
		_, err := h.e.HandOver(h.ctx, "db", HandoverTarget{Address: "http://nomad-b:4646"}, force, nil)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "already handed over to Nomad at http://nomad-a:4646") {
			t.Fatalf("handing over to a second cluster (force=%v): %v, want a conflict naming the first", force, err)
		}
	}
	if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 1 || hs[0].Address != a.Address {
		t.Fatalf("mark after the refusal: %+v", hs)
	}
}

// A handed-over volume says so where a user looks first: its status carries the mark and is
// not schedulable, naming the Nomad address; taken back, it is schedulable again.
func TestHandedOverVolumeStatusSaysSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	before, err := h.e.Volume(h.ctx, "db")
	if err != nil || before.Handover != nil || !before.Schedulability().OK() {
		t.Fatalf("before the handover: handover %+v, schedulability %v, err %v; want none and schedulable", before.Handover, before.Schedulability(), err)
	}
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	if _, err := h.e.HandOver(h.ctx, "db", to, false, nil); err != nil {
		t.Fatal(err)
	}
	v := h.volumeInfo("db")
	s := v.Schedulability()
	if v.Handover == nil || v.Handover.Address != to.Address || v.Schedulable || s.Why != HandedOver ||
		!strings.Contains(s.Sentence(), to.Address) {
		t.Fatalf("handed over: handover %+v, schedulable %v, %q; want the mark, not schedulable, naming %s", v.Handover, v.Schedulable, s.Sentence(), to.Address)
	}
	if _, err := h.e.TakeBack(h.ctx, "db", because("test"), nil); err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.Handover != nil || !v.Schedulability().OK() {
		t.Fatalf("taken back: handover %+v, schedulability %v, err %v", v.Handover, v.Schedulability(), err)
	}
}

// While a volume is handed over, volctl does not act on it as an orchestrator behind Nomad's
// back: it does not grow it (expand, or a create or register asking for more) and a detach,
// forced or not, does not unpublish it from this node, where Nomad's allocs may be using it.
// Snapshots stay allowed: they neither claim nor change the volume.
func TestHandedOverVolumeIsNotExpandedOrDetached(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("db", capab(spec.SingleNodeWriter))
	sv.CapacityMin = 1 << 20
	h.create(sv)
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	if _, err := h.e.HandOver(h.ctx, "db", to, false, nil); err != nil {
		t.Fatal(err)
	}
	handedOver := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "handed over to Nomad at http://127.0.0.1:4646") {
			t.Errorf("%s of a handed-over volume: %v, want a conflict naming the Nomad address", what, err)
		}
	}
	_, err := h.e.ExpandVolume(h.ctx, "db", 4<<20, 0)
	handedOver("expand", err)
	bigger := sv
	bigger.CapacityMin = 8 << 20
	_, err = h.e.CreateVolume(h.ctx, bigger)
	handedOver("a create asking for more", err)
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Errorf("the same create again (nothing to do): %v", err)
	}
	for _, force := range []bool{false, true} {
		_, err = h.e.Detach(h.ctx, "db", force)
		handedOver(fmt.Sprintf("detach (force %v)", force), err)
	}
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil); err != nil {
		t.Errorf("snapshot of a handed-over volume: %v", err)
	}
	for _, rpc := range []string{"ControllerExpandVolume", "NodeExpandVolume", "ControllerUnpublishVolume"} {
		if n := h.faults.Calls(rpc); n != 0 {
			t.Errorf("%s sent %d time(s) for a volume handed over to Nomad", rpc, n)
		}
	}
	if v, _ := h.e.Volume(h.ctx, "db"); v.RequestedMin != 1<<20 {
		t.Errorf("the refused create recorded a new size: %d", v.RequestedMin)
	}
}

// countRPC counts rpc among the volume RPCs the harness's plugin received since its last reset.
func countRPC(h *harness, rpc string) int {
	n := 0
	for _, r := range h.rpcs() {
		if r == rpc {
			n++
		}
	}
	return n
}

// checkAttachmentKeptForNomad checks that volume id is still recorded, and still, attached to
// node-1 after its last local claim went, and that no ControllerUnpublishVolume was sent.
func checkAttachmentKeptForNomad(t *testing.T, h *harness, id string) {
	t.Helper()
	if n := countRPC(h, csi.RPCControllerUnpublishVolume); n != 0 {
		t.Errorf("ControllerUnpublishVolume sent %d time(s) for a volume handed over to Nomad, want none: Nomad's allocations on the node may use the attachment", n)
	}
	if st, ok := h.staging(id); !ok || !st.ControllerPublished || st.NodeID != "node-1" {
		t.Errorf("staging = %+v (found %v), want the attachment to node-1 still recorded", st, ok)
	}
	if nodes := h.mem.PublishedNodes(h.externalID(id)); len(nodes) != 1 {
		t.Errorf("plugin's attachments = %v, want the one left", nodes)
	}
}

// checkUnpublishedAfterTakeBack takes volume id back from Nomad and checks that reconcile then
// sends the ControllerUnpublishVolume that waited for it.
func checkUnpublishedAfterTakeBack(t *testing.T, h *harness, id string) {
	t.Helper()
	if _, err := h.e.TakeBack(h.ctx, id, because("deregistered from Nomad"), nil); err != nil {
		t.Fatal(err)
	}
	h.mem.ResetCalls()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile after the take-back: %v %+v", err, rep)
	}
	if n := countRPC(h, csi.RPCControllerUnpublishVolume); n != 1 {
		t.Errorf("reconcile after the take-back sent ControllerUnpublishVolume %d time(s), want 1", n)
	}
	if nodes := h.mem.PublishedNodes(h.externalID(id)); len(nodes) != 0 {
		t.Errorf("still attached to %v after the take-back and reconcile", nodes)
	}
	if st, ok := h.staging(id); ok {
		t.Errorf("staging after the take-back and reconcile = %+v, want none", st)
	}
}

// handOverClaimed registers volume "db", claims it for alloc web-0, and marks it handed over to
// Nomad anyway, as a forced handover before TestForcedHandoverRefusesClaimsHoldingAnAttachment
// did (the claim holds an attachment), returning where to.
func handOverClaimed(t *testing.T, h *harness) HandoverTarget {
	t.Helper()
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	markForcedAsBefore(t, h, "db", to)
	return to
}

// A volume handed over to Nomad while a local claim held it (forced): when that claim goes,
// volctl undoes its own node side but not the attachment, which Nomad's allocations on this
// node may be using by then; it stays recorded, with an event saying why, reconcile leaves it
// alone, and sends the unpublish once the volume is taken back.
func TestForcedHandoverKeepsTheAttachmentWhenTheLastLocalClaimGoes(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"release", "forced detach"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, nil)
			handOverClaimed(t, h)
			h.mem.ResetCalls()
			if how == "release" {
				h.release("db", "web-0")
				if n := countRPC(h, csi.RPCNodeUnstageVolume); n != 1 {
					t.Errorf("release sent NodeUnstageVolume %d time(s), want 1: the node side is volctl's own", n)
				}
				evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "nomad-attachment-kept", VolumeID: "db"})
				if err != nil || len(evs) != 1 || !strings.Contains(evs[0].Message, `node "node-1"`) ||
					!strings.Contains(evs[0].Message, "http://127.0.0.1:4646") || !strings.Contains(evs[0].Message, "volctl nomad release db") {
					t.Errorf("nomad-attachment-kept events = %+v (%v), want one naming the node, the Nomad address and the take-back", evs, err)
				}
			} else {
				res, err := h.e.Detach(h.ctx, "db", true)
				if err != nil {
					t.Fatal(err)
				}
				if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "handed over to Nomad at http://127.0.0.1:4646") {
					t.Errorf("warnings = %q, want one saying the unpublish waits for the volume to be taken back from Nomad", res.Warnings)
				}
			}
			if live := h.liveClaims("db"); len(live) != 0 {
				t.Fatalf("claims after the %s: %+v", how, live)
			}
			checkAttachmentKeptForNomad(t, h, "db")
			if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 0 {
				t.Fatalf("reconcile while handed over = %+v, %v; want nothing done, nothing wrong", rep, err)
			}
			checkAttachmentKeptForNomad(t, h, "db")
			checkUnpublishedAfterTakeBack(t, h, "db")
		})
	}
}

// A volume left attached by a forced detach that could not send ControllerUnpublishVolume is
// not handed over unless forced: the refusal names the node, the plugin and what to run. Forced,
// the unpublish waits for the volume to be taken back.
func TestHandOverRefusesAnOwedUnpublishUnlessForced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	forceDetachFailingControllerUnpublish(t, h)
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	_, err := h.e.HandOver(h.ctx, "v", to, false, nil)
	checkNamesTheOwedUnpublish(t, err, "--force")
	if hs, _ := h.e.Handovers(h.ctx, "v"); len(hs) != 0 {
		t.Fatalf("refused handover left a mark: %+v", hs)
	}
	info, err := h.e.HandOver(h.ctx, "v", to, true, nil)
	if err != nil || !info.Forced {
		t.Fatalf("forced hand over: %+v, %v", info, err)
	}
	h.mem.ResetCalls()
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 0 {
		t.Fatalf("reconcile while handed over = %+v, %v; want nothing done, nothing wrong", rep, err)
	}
	checkAttachmentKeptForNomad(t, h, "v")
	checkUnpublishedAfterTakeBack(t, h, "v")
}

// Marking a volume handed over again (volctl nomad register run again: an update in Nomad)
// after its forced handover kept the attachment of its last local claim is not refused for that
// attachment: it is Nomad's to use now, and reconcile does not send its unpublish while the
// volume is handed over, so "run volctl reconcile first" could never be followed. The mark
// stays forced, and the attachment waits for the take-back as before.
func TestHandOverAgainAfterTheAttachmentWasKeptForNomad(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	to := handOverClaimed(t, h)
	h.release("db", "web-0")
	h.mem.ResetCalls()
	info, err := h.e.HandOver(h.ctx, "db", to, false, nil)
	if err != nil {
		t.Fatalf("handing over again a volume already handed over: %v", err)
	}
	if !info.Forced {
		t.Errorf("mark after handing over again = %+v, want it still forced: the attachment kept for Nomad is still recorded", info)
	}
	checkAttachmentKeptForNomad(t, h, "db")
	checkUnpublishedAfterTakeBack(t, h, "db")
}

// A forced detach of a volume handed over anyway whose plugin attaches nothing (no
// PUBLISH_UNPUBLISH_VOLUME) has no attachment to keep for Nomad: its warnings do not say
// that ControllerUnpublishVolume was held back, or that an attachment stays recorded, when
// none is, and nothing stays recorded.
func TestForcedDetachOfAHandedOverVolumeWithNoAttachmentKeepsNone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(cfg *csitest.MemConfig) { cfg.Controller.PublishUnpublishVolume = false })
	handOverClaimed(t, h)
	res, err := h.e.Detach(h.ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "ControllerUnpublishVolume") || strings.Contains(w, "keeps it recorded") {
			t.Errorf("warning %q about an attachment the volume does not have", w)
		}
	}
	if st, ok := h.staging("db"); ok {
		t.Errorf("staging after the forced detach = %+v, want none", st)
	}
}

// Deregistering the plugin of a volume whose attachment is kept for Nomad is refused, as for
// any owed unpublish, and the refusal says what lets volctl send it: taking the volume back from
// Nomad (reconcile leaves it alone until then, and volume deregister refuses a handed-over
// volume), not only "run volctl reconcile".
func TestPluginDeregisterNamesTheTakeBackForAnAttachmentKeptForNomad(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	handOverClaimed(t, h)
	h.release("db", "web-0")
	err := h.e.DeregisterPlugin(h.ctx, "mem", true)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volctl nomad release db") {
		t.Errorf("plugin deregister --force = %v; want a conflict saying to take volume db back from Nomad first (volctl nomad release db)", err)
	}
}

// because is a TakeBack check that lets the mark go, for the reason given.
func because(why string) func(HandoverInfo) (string, error) {
	return func(HandoverInfo) (string, error) { return why, nil }
}

// The cluster a volume was handed over to, named again as Nomad's client reaches it but
// spelled otherwise (a trailing slash or path, another case, the default port written out):
// the same cluster, so handing over again is an update, not a refusal naming "the one to use",
// which is the same one. Another scheme, host or port is another cluster, still refused.
func TestHandOverToTheSameClusterSpelledOtherwise(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		marked string
		same   []string
		other  []string
	}{
		{"http://nomad-a:4646",
			[]string{"http://nomad-a:4646/", "HTTP://NOMAD-A:4646", "http://nomad-a:4646/v1/", "http://user:xxxxx@nomad-a:4646"},
			[]string{"https://nomad-a:4646", "http://nomad-a:4647", "http://nomad-b:4646", "http://nomad-a", "unix:///run/nomad.sock"}},
		{"http://10.0.0.1", []string{"http://10.0.0.1:80/"}, []string{"https://10.0.0.1", "http://10.0.0.2"}},
		{"https://[2001:db8::1]:4646", []string{"https://[2001:DB8:0::1]:4646/"}, []string{"https://[2001:db8::2]:4646"}},
		{"https://nomad.example", []string{"https://Nomad.Example:443"}, []string{"http://nomad.example"}},
		{"unix:///run/nomad/api.sock", []string{"unix:///run/nomad//api.sock"}, []string{"unix:///run/nomad/other.sock"}},
	} {
		h := newHarness(t, nil)
		h.create(volume("db", capab(spec.SingleNodeWriter)))
		if _, err := h.e.HandOver(h.ctx, "db", HandoverTarget{Address: tc.marked}, false, nil); err != nil {
			t.Fatal(err)
		}
		for _, addr := range tc.same {
			if !SameNomadAddress(tc.marked, addr) {
				t.Errorf("SameNomadAddress(%q, %q) = false, want true", tc.marked, addr)
			}
			if _, err := h.e.HandOver(h.ctx, "db", HandoverTarget{Address: addr}, false, nil); err != nil {
				t.Errorf("handed over to %s, again to %s: %v, want the same cluster", tc.marked, addr, err)
			}
			// Back to the first spelling, for the next.
			if _, err := h.e.HandOver(h.ctx, "db", HandoverTarget{Address: tc.marked}, false, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, addr := range tc.other {
			if SameNomadAddress(tc.marked, addr) {
				t.Errorf("SameNomadAddress(%q, %q) = true, want false", tc.marked, addr)
			}
			if _, err := h.e.HandOver(h.ctx, "db", HandoverTarget{Address: addr}, true, nil); !errors.Is(err, ErrConflict) {
				t.Errorf("handed over to %s, then to %s: %v, want a conflict", tc.marked, addr, err)
			}
		}
	}
}

// A mark's unsettled record (Registered): set before the registration is sent (a volctl that
// dies while it is on its way leaves it so), kept after one Nomad may yet apply and after a
// refusal while it was unsettled (which says nothing of the earlier one), cleared by one Nomad
// answered OK, which records its index (the highest stays); a first registration refused for
// certain takes the mark back.
func TestHandOverRecordsAnUnsettledRegistration(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	to := HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: "default"}
	unsettled := func() (marked, unsettled bool) {
		t.Helper()
		hs, err := h.e.Handovers(h.ctx, "db")
		if err != nil {
			t.Fatal(err)
		}
		return len(hs) == 1, len(hs) == 1 && hs[0].Unsettled
	}
	failed := errors.New("registration failed")
	for _, step := range []struct {
		name           string
		r              Registered
		err            error
		marked, unsett bool
	}{
		{"first, refused for certain", Registered{Undo: true}, failed, false, false},
		{"first, in flight", Registered{InFlight: true}, failed, true, true},
		{"again, refused for certain", Registered{Undo: true}, failed, true, true},
		{"again, answered OK", Registered{OK: true, Index: 9}, nil, true, false},
		{"again, refused for certain once settled", Registered{Undo: true}, failed, true, false},
		{"again, in flight", Registered{InFlight: true}, failed, true, true},
		{"again, answered OK at an earlier index", Registered{OK: true, Index: 4}, nil, true, false},
	} {
		var during bool
		_, err := h.e.HandOver(h.ctx, "db", to, false, func(ctx context.Context, first bool, v VolumeInfo) (Registered, error) {
			_, during = unsettled()
			return step.r, step.err
		})
		if !errors.Is(err, step.err) && (err != nil || step.err != nil) {
			t.Fatalf("%s: HandOver: %v, want %v", step.name, err, step.err)
		}
		if !during {
			t.Errorf("%s: the mark was not unsettled while the registration was on its way", step.name)
		}
		if m, u := unsettled(); m != step.marked || u != step.unsett {
			t.Errorf("%s: marked %v, unsettled %v; want %v, %v", step.name, m, u, step.marked, step.unsett)
		}
		// The highest index Nomad answered a registration OK at stays (a 404 from a state
		// before it is not Nomad's word).
		if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) == 1 && step.r.Index != 0 && hs[0].Index != 9 {
			t.Errorf("%s: mark's index %d, want 9", step.name, hs[0].Index)
		}
	}
}

// A volume handed over to one place (cluster, namespace, region) and then registered with
// NOMAD_* naming another is refused (Elsewhere), and the error's commands are the ones that
// work as pasted from the environment that was refused: that environment names another
// cluster or namespace, so a bare `nomad volume deregister db` "there" ran against it, and
// deregistered whatever volume db that cluster's NOMAD_NAMESPACE holds (someone else's) or
// found none. Each command names the mark's address, namespace and region, and the
// environment that names the mark says NOMAD_REGION is to be unset when no region was named
// at the handover (an empty region matches only an empty one: NOMAD_REGION=global is refused
// even when global is the agent's own).
func TestHandOverElsewhereSaysWhatWorksAsPasted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	a := HandoverTarget{Address: "http://nomad-a:4646", Namespace: "prod"}
	if _, err := h.e.HandOver(h.ctx, "db", a, false, nil); err != nil {
		t.Fatal(err)
	}
	for _, to := range []HandoverTarget{
		{Address: "http://nomad-b:4646", Namespace: "default"},
		{Address: "http://nomad-a:4646", Namespace: "default"},
		{Address: "http://nomad-a:4646", Namespace: "prod", Region: "global"},
	} {
		_, err := h.e.HandOver(h.ctx, "db", to, false, nil)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("hand over to %+v of a volume handed over to %+v: %v, want a conflict", to, a, err)
		}
		for _, want := range []string{
			"`NOMAD_ADDR=http://nomad-a:4646 env -u NOMAD_REGION nomad volume deregister -namespace prod db`",
			"`NOMAD_ADDR=http://nomad-a:4646 volctl nomad release db`",
			"NOMAD_ADDR=http://nomad-a:4646 NOMAD_NAMESPACE=prod with NOMAD_REGION unset",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("hand over to %+v refused: %v\nwant it to say %s", to, err, want)
			}
		}
	}
	// With a region named at the handover, the commands and the environment name it.
	h.create(volume("eu", capab(spec.SingleNodeWriter)))
	if _, err := h.e.HandOver(h.ctx, "eu", HandoverTarget{Address: "http://nomad-a:4646", Namespace: "default", Region: "eu-west"}, false, nil); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.HandOver(h.ctx, "eu", HandoverTarget{Address: "http://nomad-a:4646", Namespace: "default"}, false, nil)
	for _, want := range []string{
		"`NOMAD_ADDR=http://nomad-a:4646 nomad volume deregister -namespace default -region eu-west eu`",
		"NOMAD_ADDR=http://nomad-a:4646 NOMAD_NAMESPACE=default NOMAD_REGION=eu-west",
	} {
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) {
			t.Errorf("hand over with no region of a volume handed over in region eu-west: %v\nwant a conflict saying %s", err, want)
		}
	}
}

// A volume whose live local claims hold an attachment is not handed over, --force or not:
// Nomad, once it has it, sends ControllerUnpublishVolume for this node when an alloc's claim of
// it goes (an alloc refused the staging the local claims hold, for one), and the plugin detaches
// the volume from under their mounts. The refusal names the claims, the attachment and what to
// do, and leaves no mark. A plugin that attaches (PUBLISH_UNPUBLISH_VOLUME) is refused so even
// before the claim recorded an attachment; one that does not may still be handed over forced.
func TestForcedHandoverRefusesClaimsHoldingAnAttachment(t *testing.T) {
	t.Parallel()
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	t.Run("recorded attachment", func(t *testing.T) {
		h := newHarness(t, nil)
		h.create(volume("db", capab(spec.SingleNodeWriter)))
		h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		_, err := h.e.HandOver(h.ctx, "db", to, true, nil)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("forced hand over of a volume attached under a live claim: %v, want a conflict", err)
		}
		for _, want := range []string{`alloc "web-0"`, `attached to node "node-1"`, "ControllerUnpublishVolume", "--force does not", "volctl volume release"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
		if hs, _ := h.e.Handovers(h.ctx, "db"); len(hs) != 0 {
			t.Fatalf("refused handover left a mark: %+v", hs)
		}
		h.release("db", "web-0")
		if _, err := h.e.HandOver(h.ctx, "db", to, false, nil); err != nil {
			t.Fatalf("hand over once the claim went: %v", err)
		}
	})
	t.Run("attaching plugin, nothing attached yet", func(t *testing.T) {
		h := newHarness(t, nil)
		h.create(volume("db", capab(spec.SingleNodeWriter)))
		h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		// The claim left for reconcile before its ControllerPublishVolume: it takes one later.
		h.update(func(tx *store.Tx) error {
			st, err := tx.Stagings().Get("db")
			if err != nil {
				return err
			}
			st.ControllerPublished = false
			return tx.Stagings().Put(&st)
		})
		_, err := h.e.HandOver(h.ctx, "db", to, true, nil)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "mem" attaches volumes`) {
			t.Fatalf("forced hand over under a live claim of an attaching plugin: %v, want a conflict naming the plugin", err)
		}
	})
	t.Run("plugin that does not attach", func(t *testing.T) {
		h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
		h.create(volume("db", capab(spec.SingleNodeWriter)))
		h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		if info, err := h.e.HandOver(h.ctx, "db", to, true, nil); err != nil || !info.Forced {
			t.Fatalf("forced hand over, no attachment: %+v, %v", info, err)
		}
	})
}

// markForcedAsBefore marks volume id handed over to Nomad at to, forced past its live claims,
// as a volctl from before TestForcedHandoverRefusesClaimsHoldingAnAttachment did for a volume
// attached under them: such marks outlive an upgrade, and what volctl does with them holds.
func markForcedAsBefore(t *testing.T, h *harness, id string, to HandoverTarget) {
	t.Helper()
	h.update(func(tx *store.Tx) error {
		return tx.Handovers().Put(&store.Handover{VolumeID: id, Address: to.Address, Region: to.Region, Namespace: to.Namespace, Forced: true})
	})
}

// A volume handed over forced, whose last local claim left its attachment kept for Nomad, then
// gone from Nomad and from its storage (`nomad volume deregister -force` and the provider's
// delete, or `nomad volume delete`): Nomad answers 404, the release takes it back, and
// reconcile's owed ControllerUnpublishVolume is answered NOT_FOUND. The local state finishes:
// the attachment is no longer recorded, nothing is left owed, and a second reconcile has
// nothing to do. (Holds: NOT_FOUND counts as done when the plugin lists no attachment.)
func TestTakeBackOfAVolumeGoneFromNomadAndItsStorageFinishes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	handOverClaimed(t, h)
	h.release("db", "web-0")
	checkAttachmentKeptForNomad(t, h, "db")
	h.mem.DropVolume(h.externalID("db"))
	checkUnpublishedAfterTakeBack(t, h, "db") // the owed unpublish sent once, nothing left recorded
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 0 {
		t.Errorf("a second reconcile = %+v, %v; want nothing to do", rep, err)
	}
}
