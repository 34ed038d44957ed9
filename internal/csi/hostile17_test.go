package csi_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin's failure carrying google.rpc status details (the Any payloads of
// grpc-status-details-bin): a megabyte of them, echoing the request's secret, with escape
// sequences and binary. volctl words an error from the status's code and message alone, so none
// of the details reaches the error (nor the events, logs and --json made from it); this holds
// it so. The message beside them is bounded and scrubbed as any (TestPluginMessageIsBounded).
func TestStatusDetailsAreNotShown(t *testing.T) {
	detail := "DETAIL" + sentinelSecret + strings.Repeat("\x1b]0;title\x07\x00", 1<<16) + "DETAILTAIL"
	h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCDeleteVolume, func(any) (any, error) {
		st, err := status.New(codes.Internal, "backend failed").WithDetails(wrapperspb.String(detail), wrapperspb.Bytes([]byte(detail+"\xff\xfe")))
		if err != nil {
			return nil, err
		}
		return nil, st.Err()
	}))
	err := h.client.DeleteVolume(context.Background(), csi.DeleteVolumeRequest{VolumeID: "v", Secrets: spec.Secrets{"k": sentinelSecret}})
	if csi.CodeOf(err) != codes.Internal || !strings.Contains(err.Error(), "backend failed") {
		t.Fatalf("DeleteVolume = %v, want the plugin's INTERNAL with its message", err)
	}
	text := err.Error()
	if strings.Contains(text, "DETAIL") || strings.Contains(text, sentinelSecret) || strings.ContainsAny(text, "\x1b\x00") {
		t.Errorf("the error holds the status details, the secret or a raw control character: %.300q", text)
	}
	if len(text) > 4*csi.MaxPluginMessage {
		t.Errorf("the error is %d bytes for a short message: the details are kept", len(text))
	}
}
