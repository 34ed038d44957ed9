package csi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"

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
	// A NOT_FOUND with megabytes of details (an OK answer with them: the engine's
	// TestCreateAnsweredWithMetadataPastGRPCLimitSaysSo; each costs seconds under -race).
	for _, code := range []codes.Code{codes.NotFound} {
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
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: codes.NotFound, Trailer: 2 << 20, Times: 1})
	if err := unpublish(); !csi.IsIgnorable(err) || csi.IsAnswerUnread(err) {
		t.Errorf("NOT_FOUND with 2 MiB of metadata: %v; want the plugin's NOT_FOUND, ignorable", err)
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

// unknownNodeCapabilities is the wire form of n NodeGetCapabilities entries, each an RPC type
// no CSI version defines (1000, 1001, ...): capabilities[].rpc.type.
func unknownNodeCapabilities(n int) []byte {
	var b []byte
	for i := range n {
		typ := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(1000+i))
		rpc := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), typ)
		b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), rpc)
	}
	return b
}

// A plugin whose NodeGetCapabilities lists tens of thousands of capabilities no CSI version
// defines (gRPC's 4 MiB holds half a million): each was kept by name, after a search of the
// names kept before it (quadratic: 20,000 took seconds of CPU, half a million hours, after
// the RPC's timeout, in every command that connects, and again in every process that reads
// them back from the store); every name stored in the plugin's row and listed in the event
// of a capability change. Unknown capabilities change nothing volctl does: the first few are
// kept, to show, and the rest left out.
func TestEndlessUnknownCapabilitiesAreBounded(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	const n = 20000
	h.faults.Inject(csi.RPCNodeGetCapabilities, csitest.Fault{Raw: unknownNodeCapabilities(n)})
	start := time.Now()
	fp, err := h.client.Fingerprint(context.Background())
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	names := fp.Capabilities.Node.Names()
	if len(fp.Capabilities.Node.Unknown) > csi.MaxUnknownCapabilities {
		t.Errorf("%d unknown node capabilities kept of a plugin listing %d (in %s); want at most %d",
			len(fp.Capabilities.Node.Unknown), n, took, csi.MaxUnknownCapabilities)
	}
	if !fp.Capabilities.Node.StageUnstageVolume {
		t.Errorf("the capabilities the plugin listed before the unknown ones were lost: %v", names)
	}
	// The names round-trip as the store keeps them.
	if again := csi.ParseNodeCapabilities(names).Names(); strings.Join(again, ",") != strings.Join(names, ",") {
		t.Errorf("names read back = %v, want %v", again, names)
	}
}
