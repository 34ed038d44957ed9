package engine

import (
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// agent38: the listing asked before a ControllerExpandVolume sent again (sizeListed) had a page
// bound and no time bound, as the other checks under the plugin's controller lock have
// (boundCheck, Config.ListCheck): a plugin whose ListVolumes answers each page slowly, with a
// fresh token each time, held the expand, and the controller lock every other create, delete
// and publish through the plugin waits for, for maxCheckPages pages of it (here 1000 pages of
// 20 ms; of up to the short timeout each, hours). The listing is cut at ListCheck, the size
// not known then, and the RPC sent again on the spec's word, as for a plugin that cannot list.
func TestExpandSizeListingIsTimeBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes = true })
	h.open(Config{ListCheck: 200 * time.Millisecond})
	h.create(volume("v"))
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: 1})
	// Pages that never name the volume, each with a fresh token.
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Delay: 20 * time.Millisecond, FirstPage: true,
		Answer:    func(resp proto.Message) { resp.(*csipb.ListVolumesResponse).Entries = nil },
		NextToken: func(start string) string { return start + "." }})
	done := make(chan error, 1)
	go func() { _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("expand: %v; want it to succeed (its second ControllerExpandVolume answered OK)", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("expand still running after 60 s, %d ListVolumes pages in: the size listing holds the plugin's controller lock without a time bound",
			h.faults.Calls(csi.RPCListVolumes))
	}
	if n := h.faults.Calls(csi.RPCListVolumes); n >= maxCheckPages {
		t.Errorf("%d ListVolumes pages sent before the expand's RPC was sent again; want the listing cut by its time bound (200ms of 20ms pages), long before the %d-page bound",
			n, maxCheckPages)
	}
	if sent := h.mem.CallCount(csi.RPCControllerExpandVolume); sent != 2 {
		t.Errorf("ControllerExpandVolume sent %d times; want 2 (again, the size not known: on the spec's word)", sent)
	}
}
