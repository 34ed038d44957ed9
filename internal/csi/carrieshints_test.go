package csi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestHintsSpeakOnlyOfWhatTheRequestCarries: a plugin answering any RPC with any code gets a
// hint that speaks only of what volctl sent it. An RPC that names no volume (Probe,
// GetPluginInfo, GetPluginCapabilities, NodeGetInfo, the capability questions, GetCapacity,
// ListVolumes, a snapshot by its ID) is not told "the plugin does not know this volume; check
// its external_id" (a Probe answered NOT_FOUND was, before: round 32's finding); one that sends
// no secrets is not sent to the volume's secrets; one that asks for no size is not told the
// requested size is out of range. The RPCs that do carry them keep their hints
// (TestHints, and below).
func TestHintsSpeakOnlyOfWhatTheRequestCarries(t *testing.T) {
	w := newWorld(t)
	calls := w.calls()
	for _, rpc := range csi.RPCs {
		fs := requestFieldsOf(t, rpc)
		namesVolume := fs["volume_id"] || fs["source_volume_id"] || rpc == csi.RPCCreateVolume
		for code := codes.Canceled; code <= codes.Unauthenticated; code++ {
			w.faults.Inject(rpc, csitest.Fault{Code: code, Message: "no", Times: 1})
			err := calls[rpc](context.Background())
			var e *csi.Error
			if !errors.As(err, &e) {
				t.Fatalf("%s/%v: %v is not a *csi.Error", rpc, code, err)
			}
			var wrong []string
			if !namesVolume && sendsToAVolume(e.Hint) {
				wrong = append(wrong, "a volume, which it names none of")
			}
			if !fs["secrets"] && strings.Contains(e.Hint, "secrets") && !strings.Contains(e.Hint, "carries no secrets") {
				wrong = append(wrong, "secrets, which it sends none of")
			}
			if !fs["capacity_range"] && strings.Contains(e.Hint, "size") {
				wrong = append(wrong, "a size, which it asks for none of")
			}
			if len(wrong) > 0 {
				t.Errorf("%s answered %v: the hint speaks of %s: %q", rpc, code, strings.Join(wrong, ", and of "), e.Hint)
			}
		}
	}
	// The honest cases: the RPCs that carry a volume, secrets or a size keep the hints that
	// send the user to them.
	for _, c := range []struct {
		rpc  string
		code codes.Code
		want string
	}{
		{csi.RPCControllerPublishVolume, codes.NotFound, "check the volume's external_id"},
		{csi.RPCValidateVolumeCapabilities, codes.NotFound, "does not know this volume; check its external_id"},
		{csi.RPCNodeStageVolume, codes.Unauthenticated, "check the volume's secrets"},
		{csi.RPCNodePublishVolume, codes.PermissionDenied, "the volume's secrets lack permission"},
		{csi.RPCControllerExpandVolume, codes.OutOfRange, "requested size outside"},
		{csi.RPCNodeStageVolume, codes.Aborted, "another operation on this volume"},
		{csi.RPCProbe, codes.NotFound, `Probe sends nothing (no volume, no argument), so this answer is about the plugin itself`},
		{csi.RPCNodeUnpublishVolume, codes.Unauthenticated, "NodeUnpublishVolume carries no secrets"},
	} {
		w.faults.Inject(c.rpc, csitest.Fault{Code: c.code, Message: "no", Times: 1})
		if err := calls[c.rpc](context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s answered %v: %v; want it to say %q", c.rpc, c.code, err, c.want)
		}
	}
}

// requestFieldsOf names the fields of rpc's request message, as the CSI protobuf declares it.
func requestFieldsOf(t *testing.T, rpc string) map[string]bool {
	t.Helper()
	svcs := csipb.File_csi_proto.Services()
	for i := range svcs.Len() {
		if m := svcs.Get(i).Methods().ByName(protoreflect.Name(rpc)); m != nil {
			out := map[string]bool{}
			fs := m.Input().Fields()
			for j := range fs.Len() {
				out[string(fs.Get(j).Name())] = true
			}
			return out
		}
	}
	t.Fatalf("%s: the CSI protobuf declares no such RPC", rpc)
	return nil
}

// sendsToAVolume says whether hint sends the user to a volume volctl sent (this volume, its
// external_id, its secrets or capabilities).
func sendsToAVolume(hint string) bool {
	for _, w := range []string{"this volume", "the volume ", "the volume's", "external_id"} {
		if strings.Contains(hint, w) {
			return true
		}
	}
	return false
}
