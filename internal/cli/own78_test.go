package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/store"
)

// TestNomadRegisterDryRunOwedUnpublishAdviceWorksAsTheRegistrationsDoes: volume db is recorded
// attached to node n1 with no claim (an owed ControllerUnpublishVolume) through plugin hp, which
// answers but has no PUBLISH_UNPUBLISH_VOLUME. `volctl nomad register db` is refused, and its
// refusal now says what sends the unpublish for the plugin as it is (owedUnpublishWay: "Nothing
// can send it now ... start the plugin with that capability again, then run `volctl
// reconcile`"). Its --dry-run, the plan a CI gates the handover on, still says "`volctl
// reconcile` sends it once plugin "hp" answers" (planRegistration in internal/cli/nomad.go): the
// very promise the registration's refusal was corrected for. hp answers; followed, `volctl
// reconcile` sends nothing, db stays attached, and the plan refuses again with the same advice: a
// dead end. Correct: the plan's would_fail advises what the registration's refusal does (the
// way owedUnpublishWay words it), so that, followed, it works.
// Found by helper review78 (own3).
func TestNomadRegisterDryRunOwedUnpublishAdviceWorksAsTheRegistrationsDoes(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	updateStore(t, h, func(tx *store.Tx) error {
		return tx.Stagings().Put(&store.Staging{VolumeID: "db", PluginID: "hp", NodeID: "n1", ControllerPublished: true})
	})
	_, _, refusal := registerIn(h, n)
	if refusal == nil || ExitCode(refusal) != ExitConflict || !strings.Contains(refusal.Error(), "PUBLISH_UNPUBLISH_VOLUME") {
		t.Fatalf("precondition: handover of db owed a ControllerUnpublishVolume its plugin cannot take: %v (exit %d), want refused naming the missing capability", refusal, ExitCode(refusal))
	}
	plan := func() (string, error) {
		ios, _, out, errOut := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true})
		return out.String() + errOut.String(), err
	}
	said, err := plan()
	if ExitCode(err) != ExitConflict || !strings.Contains(said, "ControllerUnpublishVolume") {
		t.Fatalf("precondition: dry-run of the handover of db: %v (exit %d)\n%s\nwant exit 4 saying the owed ControllerUnpublishVolume", err, ExitCode(err), said)
	}
	const promise = "`volctl reconcile` sends it once plugin"
	if strings.Contains(said, promise) || !strings.Contains(said, "PUBLISH_UNPUBLISH_VOLUME") {
		// Followed as written (plugin hp answers, reconcile runs), it sends nothing: db stays
		// attached, and the plan says the same again.
		t.Errorf("dry-run of the handover of db, its plugin without PUBLISH_UNPUBLISH_VOLUME:\n%s\nwant it to say what sends the owed unpublish, as the registration's refusal does, not %q: %v", said, promise, refusal)
	}
}

// TestNomadRegisterNotForcedDoesNotSayItWasForcedPastAnIdleRecordOfItsStorage: volume db's
// storage is recorded again here as db2 (plugin hp2 on hp's socket), which nothing claims,
// stages or attaches: `volctl nomad register db`, without --force, is not refused for it
// (refuseStorageInUseElsewhere refuses only a record in use). It then prints forcedPastNote's
// note, written for a handover forced past a record in use (nomad.go's forcedPastNote, which
// fires on any sent.SameStorage): "Nomad's allocs and volctl's claims of that share one storage,
// each ignoring the other's access mode; stop using it here", and again at every
// re-registration ("Updated"). Neither holds: nothing uses db2, and volctl refuses every claim
// of db2 while db is with Nomad (the claim below exits 4). The user is told a danger that does
// not exist and to stop a use there is not. Correct: the note is said of a handover forced past
// the record (the mark's forced, the refusal --force overrode), or worded as what is true (db2
// records the storage too; its claims are refused while db is with Nomad).
// Found by helper review78 (own3).
func TestNomadRegisterNotForcedDoesNotSayItWasForcedPastAnIdleRecordOfItsStorage(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	recordTwice(t, h, "hp", "hp2", nil)
	_, errOut, err := registerIn(h, n)
	if err != nil {
		t.Fatalf("precondition: handover of db without --force, db2 recording its storage and idle: %v", err)
	}
	if code, claimErr := runOn(h.ctx, h.e, "volume", "claim", "db2", "--alloc", "x"); code != ExitConflict {
		t.Fatalf("precondition: a claim of db2 with db handed over: exit %d (%s), want refused, exit 4", code, claimErr)
	}
	for _, lie := range []string{"volctl's claims of that share one storage", "stop using it here"} {
		if strings.Contains(errOut, lie) {
			t.Errorf("nomad register db without --force, db2 idle and its claims refused while db is with Nomad, says %q:\n%s", lie, errOut)
			break
		}
	}
	// What is true is said: db2 records the storage too, and its deregister tidies it.
	if !strings.Contains(errOut, "db2 (plugin hp2)") || !strings.Contains(errOut, "`volctl volume deregister db2`") {
		t.Errorf("nomad register db, db2 recording its storage too and idle, does not name db2 and its deregister:\n%s", errOut)
	}
}
