package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// followRegisterAdvice runs the `volctl nomad register db` that advice names, as a person pastes
// it into the shell they ran the refused command in: NOMAD_* settings written before it are
// set (NOMAD_ADDR aside: the fake's address is the client's), none others changed.
func followRegisterAdvice(t *testing.T, h *cliHarness, n *fakeNomad, advice string) error {
	t.Helper()
	m := regexp.MustCompile("`((?:NOMAD_[A-Z_]+=\\S+ )*)volctl nomad register db`").FindStringSubmatch(advice)
	if m == nil {
		t.Fatalf("precondition: the advice names no `volctl nomad register db`:\n%s", advice)
	}
	for _, kv := range strings.Fields(m[1]) {
		k, v, _ := strings.Cut(kv, "=")
		if k != "NOMAD_ADDR" {
			t.Setenv(k, strings.Trim(v, "'"))
		}
	}
	_, _, err := registerIn(h, n)
	return err
}

// A volume handed over with NOMAD_NAMESPACE=team whose registration Nomad did not answer is
// marked handed over, unsettled, in namespace team. `volctl nomad release db`, run later from a
// shell without NOMAD_NAMESPACE, asks Nomad in the mark's namespace (as documented), gets its 404
// and refuses it (exit 4), saying "`volctl nomad register db` again settles it". Run as written
// in that shell, that registration names namespace default and is refused in turn (exit 4,
// "already handed over to ... namespace team, not to ..."): the advice of the refusal does not
// work when followed. The advice must name the settings that make the registration go where
// the mark says (NOMAD_NAMESPACE=team ..., as TakeBackCommands does), so that followed, it
// settles the mark.
// Fault: askedToTakeBack (internal/cli/nomad.go), h.Unsettled branches: the bare
// `volctl nomad register ID`, without the mark's environment (HandoverInfo.settings).
// Found by helper review74.
func TestReleaseRefusalOfAnUnsettledMarkAdvisesARegistrationThatRunsInThisShell(t *testing.T) {
	h, a := unsettledInTeam(t)

	_, err := runNomadRelease(h, a.client, nil)
	if err == nil || !handedOver(t, h) || ExitCode(err) != ExitConflict {
		t.Fatalf("precondition: release of an unsettled mark on Nomad's 404: %v (exit %d), want the refusal", err, ExitCode(err))
	}
	if rerr := followRegisterAdvice(t, h, a, err.Error()); rerr != nil {
		t.Errorf("release refused:\n%v\nits advice, run as written in the same shell: %v (exit %d)", err, rerr, ExitCode(rerr))
	}
}

// The same advice in `volctl nomad status`'s note on an unsettled mark (handoverNote,
// HandoverInfo.UnsettledWhy): run from a shell without the NOMAD_NAMESPACE the volume was
// handed over with, status reads the volume where the mark says and notes "`volctl nomad
// register db` again finishes the handover", which, run as written there, is refused as a
// handover to another namespace. Status's note must name the settings that make it run where
// the mark says.
// Fault: handoverNote (internal/cli/nomad.go) through HandoverInfo.whatToRun
// (internal/engine/handover.go): the bare command, without the mark's environment.
// Found by helper review74.
func TestNomadStatusUnsettledNoteAdviceRunsAsWrittenInAnotherNamespacesShell(t *testing.T) {
	h, a := unsettledInTeam(t)

	ios, _, out, errOut := iostreams.Test()
	serr := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: a.client})
	notes := errOut.String()
	if !strings.Contains(notes, "volctl nomad register db`") {
		t.Fatalf("precondition: status notes no registration to run (err %v):\n%s%s", serr, out, notes)
	}
	if rerr := followRegisterAdvice(t, h, a, notes); rerr != nil {
		t.Errorf("nomad status:\n%s%s\nits advice, run as written in the same shell: %v (exit %d)", out, notes, rerr, ExitCode(rerr))
	}
}

// A volume handed over with NOMAD_REGION unset is in the agent's own region: its mark records
// none. `volctl nomad release` from a shell with NOMAD_REGION=eu asks that home region (as
// documented), finds Nomad still has the volume, and refuses (exit 4), naming the `nomad volume
// deregister` to run first. The nomad CLI reads NOMAD_REGION: run as written there, it
// deregistered volume db in region eu (another volume by the ID, maybe), the one handed over
// left. The command unsets NOMAD_REGION for a mark naming no region. Found by helper review74.
func TestReleaseRefusalsDeregisterRunsInTheRegionTheVolumeWasHandedOverIn(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	t.Setenv("NOMAD_REGION", "")
	if _, _, err := registerIn(h, a); err != nil || !handedOver(t, h) {
		t.Fatalf("precondition: register in the agent's own region: %v (marked: %v)", err, handedOver(t, h))
	}
	t.Setenv("NOMAD_REGION", "eu")
	_, err := runNomadRelease(h, a.client, nil)
	if err == nil || ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "still registered in Nomad") {
		t.Fatalf("precondition: release while Nomad has the volume: %v (exit %d), want exit 4", err, ExitCode(err))
	}
	if want := "`env -u NOMAD_REGION nomad volume deregister -namespace default db`"; !strings.Contains(err.Error(), want) {
		t.Errorf("release refused:\n%v\nwant its deregister to reach the region the volume was handed over in from this shell (NOMAD_REGION=eu): %s", err, want)
	}
}

// unsettledInTeam hands volume db over with NOMAD_NAMESPACE=team to a Nomad that does not
// answer the registration (its mark unsettled, in namespace team), then leaves the shell
// without NOMAD_NAMESPACE.
func unsettledInTeam(t *testing.T) (*cliHarness, *fakeNomad) {
	t.Helper()
	h := nomadHarness(t)
	a := newFakeNomad(t)
	t.Setenv("NOMAD_NAMESPACE", "team")
	a.setOnPut(hangUp)
	if _, _, err := registerIn(h, a); err == nil || !handedOver(t, h) {
		t.Fatalf("precondition: register without an answer: %v (marked: %v)", err, handedOver(t, h))
	}
	a.setOnPut(nil)
	t.Setenv("NOMAD_NAMESPACE", "")
	return h, a
}
