package csi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin's answer with metadata past the 16 MiB of headers and trailers gRPC's client reads
// (megabytes of status details, or of a trailer) makes gRPC close the connection with an
// HTTP/2 PROTOCOL_ERROR, the answer and its code dropped unread. That read as the plugin
// unreachable ("is the plugin running and listening on ...?"), while it had answered and will
// answer so again. It stays what a lost answer is (retryable: the plugin may have done the
// call, or refused it, which its lost code would have said), but says what happened. Under
// the limit, the answer and its code are read as they are.
func TestAnswerWithMetadataPastGRPCLimitIsNotAPluginDown(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	ctx := context.Background()
	unpublish := func() error {
		return h.client.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: "vol-1", TargetPath: "/target"})
	}
	for _, code := range []codes.Code{codes.OK, codes.NotFound, codes.Unavailable} {
		h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: code, Trailer: 17 << 20, Times: 1})
		err := unpublish()
		if csi.ClassOf(err) != csi.Retryable || csi.IsAnswerUnread(err) {
			t.Errorf("%v with 17 MiB of metadata: %v (class %v, unread %t); want a lost answer: retryable, not known to be done",
				code, err, csi.ClassOf(err), csi.IsAnswerUnread(err))
		}
		for _, want := range []string{"16 MiB", "report it to the plugin's authors"} {
			if !strings.Contains(fmt.Sprint(err), want) {
				t.Errorf("%v with 17 MiB of metadata: error lacks %q: %v", code, want, err)
			}
		}
		if strings.Contains(fmt.Sprint(err), "is the plugin running") {
			t.Errorf("%v with 17 MiB of metadata: error blames a plugin not running, which answered: %v", code, err)
		}
	}
	// Under the limit: the plugin's own answer, code and class.
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: codes.NotFound, Trailer: 8 << 20, Times: 1})
	if err := unpublish(); !csi.IsIgnorable(err) || csi.IsAnswerUnread(err) {
		t.Errorf("NOT_FOUND with 8 MiB of metadata: %v; want the plugin's NOT_FOUND, ignorable", err)
	}
}

// A plugin answering a status code outside gRPC's 0..16 (a C++ or hand-rolled server may send
// any number in grpc-status): every error names what to do, and this one had no hint at all
// ("NodeStageVolume: Code(99): ..."). It is final (nothing says a retry would mend it) and says
// the code is none CSI defines.
func TestCodeOutsideGRPCsRangeIsFinalAndSaysSo(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	h.faults.Inject(csi.RPCNodeUnstageVolume, csitest.Fault{Code: codes.Code(99), Message: "weird", Times: 1})
	err := h.client.NodeUnstageVolume(context.Background(), csi.NodeUnstageVolumeRequest{VolumeID: "vol-1", StagingPath: "/s"})
	if csi.CodeOf(err) != codes.Code(99) || csi.ClassOf(err) != csi.Final {
		t.Fatalf("code 99: %v (code %v, class %v); want it kept, final", err, csi.CodeOf(err), csi.ClassOf(err))
	}
	for _, want := range []string{"weird", "status code 99", "report it to the plugin's authors"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("code 99: error lacks %q: %v", want, err)
		}
	}
}
