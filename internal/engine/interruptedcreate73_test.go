package engine

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestDeleteOfAnInterruptedCreateThroughAnotherDriverKeepsTheRecord: `volume delete` of a
// volume whose create was interrupted (every CreateVolume answer lost: the registered driver
// made the volume under the create's CSI name) sends CreateVolume again to learn what the
// plugin made. With another driver behind the plugin's held socket, checkSockets refused that
// CreateVolume unsent (a conflict naming both drivers), and finishCreateForDelete took that
// refusal, a conflict, for the plugin answering the name with another's volume: the record was
// forgotten ("forgotten but not deleted ... leave that volume alone"), while the registered
// driver, once back, still held the volume the lost answer was about, tracked by nothing.
// docs/architecture.md: "another driver answering a create ... a create is refused, its intent
// forgotten when no attempt was sent before (one that was, its answer lost, keeps it:
// `sendAnswered`)", and of the delete of an interrupted create: "While the plugin cannot
// answer, nothing is deleted and the create stays recorded." Found by helper review73.
func TestDeleteOfAnInterruptedCreateThroughAnotherDriverKeepsTheRecord(t *testing.T) {
	t.Parallel()
	h, held, backend := heldHarness(t)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
		t.Fatal("create with every answer lost succeeded")
	}
	h.faults.Clear()
	if n := len(h.mem.Volumes()); n != 1 {
		t.Fatalf("the registered driver holds %d volumes after the lost creates, want 1", n)
	}
	if got := h.volumeRow("v").State; got != store.VolumeCreating {
		t.Fatalf("volume v after the lost creates is %s, want creating", got)
	}
	other := driverBehind(t, held)
	h.open(Config{}) // the next process, reusing the fingerprint: the socket file is the same

	err := h.e.DeleteVolume(h.ctx, "v")
	if n := other.CallCount(csi.RPCCreateVolume) + other.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("%d CreateVolume/DeleteVolume sent to driver other.csi.example", n)
	}
	_, verr := h.e.Volume(h.ctx, "v")
	if errors.Is(verr, ErrNotFound) {
		t.Fatalf("volume v forgotten by a delete whose CreateVolume was not sent (another driver behind the socket; delete said: %v), "+
			"while the registered driver still holds %d volume(s) made under its name, tracked by nothing", err, len(h.mem.Volumes()))
	}
	if err == nil {
		t.Errorf("delete through another driver succeeded")
	}
	if got := h.volumeRow("v").State; got != store.VolumeCreating {
		t.Errorf("volume v after the refused delete is %s, want still creating", got)
	}
	// With the registered driver back, the delete finishes: the storage goes.
	held.Switch(backend)
	h.open(Config{})
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete with the registered driver back: %v", err)
	}
	if n := len(h.mem.Volumes()); n != 0 {
		t.Errorf("the registered driver still holds %d volume(s) after the delete", n)
	}
}

// TestDeleteOfAnInterruptedCreateWhoseDriverCheckFailsKeepsTheRecord: `volume delete` of a
// volume whose create was interrupted (every CreateVolume answer lost: the plugin made the
// volume under the create's CSI name) sends CreateVolume again to learn what the plugin made,
// asking first which driver serves the socket (GetPluginInfo, checkSockets). That question
// answered INTERNAL left CreateVolume unsent ("not sent: asking which driver serves the socket
// failed"), a Final code copied from GetPluginInfo's, and finishCreateForDelete took it for the
// plugin refusing the create for good: the record was forgotten and the delete succeeded, while
// the plugin still held the volume the lost answer was about, tracked by nothing.
// docs/architecture.md (What a create cannot know): "While the plugin cannot answer, nothing is
// deleted and the create stays recorded. A plugin refusing the create for good holds nothing
// under the name" — a CreateVolume never sent is no refusal of it. Found by helper review73.
func TestDeleteOfAnInterruptedCreateWhoseDriverCheckFailsKeepsTheRecord(t *testing.T) {
	t.Parallel()
	h := createWithEveryAnswerLost(t)
	sent := h.mem.CallCount(csi.RPCCreateVolume)
	h.faults.FailAlways(csi.RPCGetPluginInfo, codes.Internal)
	err := h.e.DeleteVolume(h.ctx, "v")
	h.faults.Clear()
	if n := h.mem.CallCount(csi.RPCCreateVolume) - sent; n != 0 {
		t.Fatalf("the delete sent CreateVolume %d time(s); this case is of one whose CreateVolume was not sent", n)
	}
	_, verr := h.e.Volume(h.ctx, "v")
	if errors.Is(verr, ErrNotFound) {
		t.Fatalf("volume v forgotten by a delete whose CreateVolume was not sent (GetPluginInfo answered INTERNAL; delete said: %v), "+
			"while the plugin still holds %d volume(s) made under its name, tracked by nothing", err, len(h.mem.Volumes()))
	}
	if err == nil {
		t.Errorf("delete whose CreateVolume was not sent succeeded")
	}
	if got := h.volumeRow("v").State; got != store.VolumeCreating {
		t.Errorf("volume v after the failed delete is %s, want still creating", got)
	}
	// The error's advice: run the delete again once the plugin answers; the storage goes.
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete again with the plugin answering: %v", err)
	}
	if n := len(h.mem.Volumes()); n != 0 {
		t.Errorf("the plugin still holds %d volume(s) after the delete", n)
	}
}
