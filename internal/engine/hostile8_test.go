package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin failing a create with a 1 MiB message: the event the failure leaves (the log keeps
// 10,000, each holding one) and the error keep a bounded part of it, not the megabyte.
func TestPluginMessageInAnEventIsBounded(t *testing.T) {
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.InvalidArgument, Message: strings.Repeat("x", 1<<20), Times: 1})
	_, err := h.e.CreateVolume(h.ctx, volume("v"))
	if err == nil || len(err.Error()) > 2*csi.MaxPluginMessage {
		t.Fatalf("create failing with a 1 MiB message: an error of %d bytes, want one under %d", len(err.Error()), 2*csi.MaxPluginMessage)
	}
	if ev := h.eventMessages("volume-create", "v"); ev == "" || len(ev) > 2*csi.MaxPluginMessage {
		t.Errorf("the create's event is %d bytes, want one under %d", len(ev), 2*csi.MaxPluginMessage)
	}
}
