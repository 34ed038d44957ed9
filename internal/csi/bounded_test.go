package csi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// hugeMessage is a plugin's 1 MiB message with a secret straddling the point where it is cut
// (csi.MaxPluginMessage), escape sequences, and a tail.
func hugeMessage() string {
	head := strings.Repeat("h", csi.MaxPluginMessage-len(sentinelSecret)/2)
	return head + sentinelSecret + strings.Repeat("\x1b[2J", 1<<18) + "TAIL"
}

// A plugin's message is text from outside volctl that goes into errors, the event log (10,000
// rows kept, each holding one) and terminals: a plugin answering with megabytes would make
// each event as large and every `volctl events` print them. Whatever the plugin says, what
// volctl keeps of it is bounded (scrubbed before the cut, so no part of a secret is left at
// it), and says how much was left out; the ValidateVolumeCapabilities message too.
func TestPluginMessageIsBounded(t *testing.T) {
	msg := hugeMessage()
	h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCValidateVolumeCapabilities, func(any) (any, error) {
		return &csipb.ValidateVolumeCapabilitiesResponse{Message: msg}, nil
	}))
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.InvalidArgument, Message: msg, Times: 1})
	sec := spec.Secrets{"k": sentinelSecret}
	_, cerr := h.client.CreateVolume(context.Background(), csi.CreateVolumeRequest{Name: "v",
		Capabilities: []csi.VolumeCapability{sensitiveCapability()}, Secrets: sec})
	verr := h.client.ValidateVolumeCapabilities(context.Background(), csi.ValidateVolumeCapabilitiesRequest{VolumeID: "v",
		Capabilities: []csi.VolumeCapability{sensitiveCapability()}, Secrets: sec})
	for rpc, err := range map[string]error{csi.RPCCreateVolume: cerr, csi.RPCValidateVolumeCapabilities: verr} {
		if err == nil {
			t.Fatalf("%s: no error", rpc)
		}
		text := err.Error()
		if max := 4*csi.MaxPluginMessage + 1024; len(text) > max {
			t.Errorf("%s: the error is %d bytes, over %d: a plugin's message is kept whole", rpc, len(text), max)
		}
		if !strings.Contains(text, "bytes more)") || strings.Contains(text, "TAIL") {
			t.Errorf("%s: the error does not say the message was cut: %.200q", rpc, text[max(0, len(text)-200):])
		}
		if strings.Contains(text, sentinelSecret[:len(sentinelSecret)/2]) || strings.Contains(text, "\x1b") {
			t.Errorf("%s: the cut message holds part of the secret or a raw escape", rpc)
		}
	}
}

// ValidateVolumeCapabilities answering without confirming anything, its message echoing a
// secret the request did not carry (another volume's, which Config.Redact supplies): scrubbed,
// as from every other plugin message, not only of the request's own values.
func TestNotConfirmedMessageIsScrubbedOfWhatTheRequestDidNotCarry(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCValidateVolumeCapabilities, func(any) (any, error) {
		return &csipb.ValidateVolumeCapabilitiesResponse{Message: "another volume's token is " + sentinelSecret}, nil
	}), withClientConfig(csi.Config{Redact: func(context.Context) ([]string, error) { return []string{sentinelSecret}, nil }}))
	err := h.client.ValidateVolumeCapabilities(context.Background(), csi.ValidateVolumeCapabilitiesRequest{VolumeID: "v",
		Capabilities: []csi.VolumeCapability{sensitiveCapability()}})
	if err == nil || strings.Contains(err.Error(), sentinelSecret) || !strings.Contains(err.Error(), "token is [REDACTED]") {
		t.Fatalf("ValidateVolumeCapabilities = %v, want an error with the secret scrubbed", err)
	}
}

// An answer that does not pass from the plugin's protobuf to volctl's is the plugin's answer to
// a call it did, unread (IsAnswerUnread), not the plugin failing: one volctl cannot decode (a
// string that is not UTF-8) and one the plugin's own gRPC could not encode (Go's refuses the
// same string). volctl's own request that does not encode reached nothing, and says so rather
// than "the plugin failed internally; check its logs"; a plugin's INTERNAL of its own is its
// failure.
func TestAnswerThatCannotBeDecodedIsUnread(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCDeleteSnapshot, func(any) (any, error) {
		return &csipb.ListSnapshotsResponse{NextToken: "\xff"}, nil // any message: gRPC encodes it, and fails
	}))
	ctx := context.Background()
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Raw: csitest.AppendString("vol-\xff", 1, 2), Times: 1})
	_, decode := h.client.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{sensitiveCapability()}})
	encode := h.client.DeleteSnapshot(ctx, csi.DeleteSnapshotRequest{SnapshotID: "s"})
	for what, err := range map[string]error{"not decodable": decode, "not encodable by the plugin": encode} {
		if !csi.IsAnswerUnread(err) || csi.IsRetryable(err) || !strings.Contains(fmt.Sprint(err), "report it to the plugin's authors") {
			t.Errorf("an answer %s: %v (unread %t); want a final error saying the answer was not read", what, err, csi.IsAnswerUnread(err))
		}
	}
	own := h.client.NodeStageVolume(ctx, csi.NodeStageVolumeRequest{VolumeID: "vol-1", StagingPath: "/staging-\xff",
		Capability: sensitiveCapability(), PublishContext: map[string]string{"device": "/dev/mem/vol-1"}})
	h.faults.Inject(csi.RPCNodeUnstageVolume, csitest.Fault{Code: codes.Internal, Message: "disk on fire", Times: 1})
	plugins := h.client.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: "vol-1", StagingPath: "/s"})
	for what, err := range map[string]error{"volctl's own request not encodable": own, "the plugin's own INTERNAL": plugins} {
		if err == nil || csi.IsAnswerUnread(err) {
			t.Errorf("%s: %v (unread %t); want an error that is no answer unread", what, err, csi.IsAnswerUnread(err))
		}
	}
	if !strings.Contains(fmt.Sprint(own), "volctl's request cannot be encoded, and was not sent") || strings.Contains(fmt.Sprint(own), "check its logs") {
		t.Errorf("volctl's own request not encodable: %v; want it said, not blamed on the plugin", own)
	}
}

// A CreateVolume or ListVolumes answer with a negative capacity_bytes, which the CSI spec does
// not allow: read as not stated (0, "unknown" in status and JSON), as a snapshot's negative
// size_bytes is, not recorded and shown as a negative size.
func TestNegativeVolumeCapacityReadsAsNotStated(t *testing.T) {
	vol := &csipb.Volume{VolumeId: "vol-1", CapacityBytes: -5}
	h := newHarness(t, csitest.DefaultMemConfig(),
		withOverride(csi.RPCCreateVolume, func(any) (any, error) { return &csipb.CreateVolumeResponse{Volume: vol}, nil }),
		withOverride(csi.RPCListVolumes, func(any) (any, error) {
			return &csipb.ListVolumesResponse{Entries: []*csipb.ListVolumesResponse_Entry{{Volume: vol}}}, nil
		}))
	v, err := h.client.CreateVolume(context.Background(), csi.CreateVolumeRequest{Name: "v", CapacityMin: 1 << 20,
		Capabilities: []csi.VolumeCapability{sensitiveCapability()}})
	if err != nil || v.ID != "vol-1" || v.CapacityBytes != 0 {
		t.Errorf("CreateVolume answered capacity_bytes -5 = %+v, %v; want volume vol-1 with its capacity not stated (0)", v, err)
	}
	page, err := h.client.ListVolumes(context.Background(), csi.ListVolumesRequest{})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Volume.CapacityBytes != 0 {
		t.Errorf("ListVolumes answered capacity_bytes -5 = %+v, %v; want its capacity not stated (0)", page, err)
	}
}
