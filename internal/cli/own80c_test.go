package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestDashboardDoesNotOfferTheDetachOfAClaimlessVolumeHandedOverToNomad: volume db is handed
// over to Nomad while a local claim holds its attachment (a forced handover as an older volctl
// made it); `volctl volume detach db --force --yes` frees the claim and keeps the attachment for
// Nomad (recorded, its unpublish waiting for the take-back). db now has no claim and a staging
// row, so VolumeSummary.Leftover is true, and the dashboard's d (tui Model.target, volumeKeys)
// asks "Detach volume "db"? It has no claims on this host: what it still records of its
// staging or attachment is undone, as reconcile does." Confirmed, the engine refuses it at
// once (refuseHandedOver: "handed over to Nomad ... Nomad claims it, not volctl"), as
// `volctl volume detach db` does; and reconcile does not undo it either. The question promises
// an undo neither the detach nor reconcile makes. Correct: Leftover (or target) leaves out a
// volume handed over to Nomad: d says it is handed over, with the way to take it back, and asks
// nothing, as the engine would answer.
// Found by helper review80 (own80c), in this round's own change.
func TestDashboardDoesNotOfferTheDetachOfAClaimlessVolumeHandedOverToNomad(t *testing.T) {
	requireMount(t)
	h := newCLIHarnessServing(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	h.claim(t, "db", "web-0")
	updateStore(t, h, func(tx *store.Tx) error {
		return tx.Handovers().Put(&store.Handover{VolumeID: "db", Address: "http://127.0.0.1:4646", Forced: true})
	})
	if code, out, errOut := runOnOut(h.ctx, h.e, "volume", "detach", "db", "--force", "--yes"); code != ExitOK {
		t.Fatalf("premise: the forced detach frees the claim, keeping the attachment for Nomad: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runOnOut(h.ctx, h.e, "volume", "detach", "db", "--yes"); code == ExitOK || !strings.Contains(errOut, "handed over to Nomad") {
		t.Fatalf("premise: the engine refuses a plain detach of db, claimless and handed over: exit %d\n%s%s", code, out, errOut)
	}

	// The volumes view (1), its one volume selected: d.
	frame := driveDashboard(t, h.state, 120, 60, runes("1"), runes("d"))
	if said := unwrapped(frame); strings.Contains(said, "stillrecordsofitsstagingorattachmentisundone") || !strings.Contains(said, "handedovertoNomad") {
		t.Errorf("the dashboard's d on db, handed over to Nomad with no claim (a detach the engine refuses), asks to undo its staging or attachment \"as reconcile does\":\n%s\n"+
			"want it refused at once as handed over to Nomad, not a question promising an undo that neither the detach nor reconcile makes", frame)
	}
}
