package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// State dir A claims volume v (the plugin publishes it to node-1). State dir B creates w with a
// spec v's storage satisfies, and a plugin mapping two names onto one storage volume answers
// B's CreateVolume with v's. A volume a create makes is published nowhere (the reasoning
// unusableAnswerHeld applies to an unusable answer), so this answer is A's volume, in use; yet
// only an unusable answer was asked about: the usable one was recorded as B's volume w, ready.
// Once A released its claim, B's `volume delete w` (nothing published any more) deleted A's
// data from under A's record of v. Now every answer is asked about, where the plugin can say.
// Found by helper review63.
func TestCreateAnsweredWithAnotherStateDirsPublishedVolumeIsNotRecorded(t *testing.T) {
	t.Parallel()
	h, other, ext := claimedInAnotherStateDir(t)
	h.mem.AnswerCreateWith(ext)

	info, err := other.CreateVolume(h.ctx, volume("w")) // a usable answer: same spec as v's
	if err == nil {
		t.Errorf("create of w answered with volume %q, published to node-1 by state dir A, succeeded: recorded as w (external ID %q, state %s)",
			ext, info.ExternalID, info.State)
	}
	h.mem.AnswerCreateWith("")

	// What the record lets happen: A releases, B deletes "its" w.
	h.release("v", "a")
	if _, verr := other.Volume(h.ctx, "w"); verr == nil {
		derr := other.DeleteVolume(h.ctx, "w")
		if _, ok := h.mem.Volume(ext); !ok {
			t.Errorf("state dir B's delete of w (%v) deleted volume %q, state dir A's volume v: A still records it, its data gone (DeleteVolume sent %d time(s))",
				derr, ext, h.mem.CallCount(csi.RPCDeleteVolume))
		}
	} else if !errors.Is(verr, ErrNotFound) {
		t.Fatal(verr)
	}
}

// State dir B's create of w was interrupted (every CreateVolume answer lost). Its `volume
// delete` sends CreateVolume again under w's name, which a plugin mapping two names onto one
// volume answers with state dir A's volume v, published to node-1 (and too small for w: the
// cleanup's question runs, keepPublishedAnswer). The record is forgotten, and the error ended
// "delete that volume with the storage provider's tools": the volume the plugin holds under
// the name is, by its own answer, A's published volume, whose data that deletes. The create's
// own cleanup and `volume deregister` of such a cleanup (deleteMayBeLeft) both say the storage
// may be another's and to leave it while a node has it published; so does this now. Found by
// helper review63.
func TestDeleteOfAnInterruptedCreateAnsweredWithAPublishedVolumeDoesNotAdviseDeletingIt(t *testing.T) {
	t.Parallel()
	h, other, ext := claimedInAnotherStateDir(t)

	sv := volume("w")
	sv.CapacityMin = 1 << 40 // more than v's storage holds
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := other.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("create of w with every answer lost succeeded")
	}
	h.faults.Clear()
	h.mem.AnswerCreateWith(ext)

	err := other.DeleteVolume(h.ctx, "w")
	if err == nil {
		t.Fatal("delete of w answered with A's published volume succeeded")
	}
	if _, ok := h.mem.Volume(ext); !ok {
		t.Fatalf("A's volume %q was deleted", ext)
	}
	t.Logf("err = %v", err)
	if strings.HasSuffix(err.Error(), "delete that volume with the storage provider's tools") {
		t.Errorf("the delete's error advises deleting the volume the plugin holds under w's name, which the plugin answered is volume %q, published to node-1 (state dir A's v, in use):\n%v", ext, err)
	}
}
