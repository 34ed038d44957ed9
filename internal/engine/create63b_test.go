package engine

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"google.golang.org/grpc/codes"
)

// Volume v is created and claimed in THIS state dir (the plugin publishes it to node-1). A
// plugin mapping two names onto one volume answers the create of w with v's storage. Before
// this round, refuseSharedStorage refused it naming v ("which is already volume "v"; the
// storage belongs to "v""). Now the published check runs first, and keepPublishedAnswer's
// refusal says the volume is "another volctl state dir's, Nomad's, or attached by hand": it
// names the wrong owner (this state dir's own volume v), and does not name v at all, so the
// user goes looking in other state dirs / Nomad for a volume volctl itself records and published.
// Found by helper review63 own3.
func TestCreateAnsweredWithThisStateDirsPublishedVolumeNamesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.mem.AnswerCreateWith(ext)

	_, err := h.e.CreateVolume(h.ctx, volume("w"))
	if err == nil {
		t.Fatalf("create of w answered with v's storage %q succeeded", ext)
	}
	t.Logf("err = %v", err)
	if !strings.Contains(err.Error(), `volume "v"`) {
		t.Errorf("the refusal of w's create, answered with volume %q (this state dir's volume v, which volctl published to node-1), does not name volume \"v\":\n%v", ext, err)
	}
	if strings.Contains(err.Error(), "another volctl state dir's, Nomad's, or attached by hand") {
		t.Errorf("the refusal says the answer is another state dir's / Nomad's / attached by hand; it is this state dir's recorded volume v:\n%v", err)
	}
}

// Every CreateVolume answer is now checked for published nodes (finishCreate), through
// unusableAnswerHeld, whose failure warning is worded for the cleanup of an UNUSABLE answer:
// "its unusable answer to volume "w"'s CreateVolume ... could not be checked: DeleteVolume not
// sent". For a usable answer whose check fails (a ListVolumes that answers UNAVAILABLE), the
// create goes on and records the volume, yet the warning printed on stderr (volctl logs warnings
// by default) tells the user the answer was unusable and left undeleted: they go looking for
// leaked storage, or delete the volume they just created. Found by helper review63 own3.
func TestUsableAnswerWhoseCheckFailsIsNotCalledUnusable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	var logs bytes.Buffer
	h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Code: codes.Unavailable, Times: 1000})

	info, err := h.e.CreateVolume(h.ctx, volume("w"))
	h.faults.Clear()
	if err != nil {
		t.Fatalf("create of w with its answer usable and its listing failing: %v", err)
	}
	t.Logf("created %q (state %s); logs:\n%s", info.ExternalID, info.State, logs.String())
	if strings.Contains(logs.String(), "unusable answer") || strings.Contains(logs.String(), "DeleteVolume not sent") {
		t.Errorf("create of w succeeded with a usable answer (recorded, external ID %q), but the warning calls it an unusable answer left undeleted:\n%s", info.ExternalID, logs.String())
	}
}
