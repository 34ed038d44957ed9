package csi_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestHintsSpeakOnlyOfTheArgumentsTheRequestCarries: INVALID_ARGUMENT's hint sent the user to
// "the volume's capabilities, parameters, context and mount options", and ALREADY_EXISTS's said
// "an object with this name exists", for RPCs that carry none of them: a DeleteVolume, a
// NodeUnpublishVolume or a NodeGetVolumeStats rejected had the user edit a spec's parameters
// and mount options that were never sent (round 33's carriesHint left these two codes to
// codeHints). Each hint now names such an argument only where the request has one, as the CSI
// protobuf declares it; the RPCs that carry them keep their hints.
func TestHintsSpeakOnlyOfTheArgumentsTheRequestCarries(t *testing.T) {
	w := newWorld(t)
	calls := w.calls()
	for _, rpc := range csi.RPCs {
		fs := requestFieldsOf(t, rpc)
		shaped := fs["volume_capability"] || fs["volume_capabilities"] || fs["parameters"] || fs["volume_context"]
		for _, code := range []codes.Code{codes.InvalidArgument, codes.AlreadyExists} {
			w.faults.Inject(rpc, csitest.Fault{Code: code, Message: "no", Times: 1})
			err := calls[rpc](context.Background())
			var e *csi.Error
			if !errors.As(err, &e) {
				t.Fatalf("%s/%v: %v is not a *csi.Error", rpc, code, err)
			}
			var wrong []string
			if !shaped {
				for _, w := range []string{"capabilit", "parameters", "mount options", "context"} {
					if strings.Contains(e.Hint, w) && !strings.Contains(e.Hint, "carries no capabilities") {
						wrong = append(wrong, w+", which it sends none of")
					}
				}
			}
			if !fs["name"] && strings.Contains(e.Hint, "this name") {
				wrong = append(wrong, "a name, which it sends none of")
			}
			if len(wrong) > 0 {
				t.Errorf("%s answered %v: the hint speaks of %s: %q", rpc, code, strings.Join(wrong, ", and of "), e.Hint)
			}
		}
	}
	for _, c := range []struct {
		rpc  string
		code codes.Code
		want string
	}{
		{csi.RPCNodePublishVolume, codes.InvalidArgument, "check the volume's capabilities, parameters, context and mount options"},
		{csi.RPCControllerPublishVolume, codes.InvalidArgument, "check the volume's capabilities, parameters, context and mount options"},
		{csi.RPCValidateVolumeCapabilities, codes.AlreadyExists, "exists already"},
		{csi.RPCNodeUnpublishVolume, codes.InvalidArgument, "NodeUnpublishVolume carries no capabilities, parameters, context or mount options"},
		{csi.RPCDeleteVolume, codes.AlreadyExists, "DeleteVolume makes nothing by name"},
		{csi.RPCCreateSnapshot, codes.AlreadyExists, "a snapshot with this name exists"},
	} {
		w.faults.Inject(c.rpc, csitest.Fault{Code: c.code, Message: "no", Times: 1})
		if err := calls[c.rpc](context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s answered %v: %v; want it to say %q", c.rpc, c.code, err, c.want)
		}
	}
}

// TestInvalidArgumentHintNamesTheSecretsTheRequestCarries: a plugin answers INVALID_ARGUMENT
// for a secret it needs and was not sent (a key missing from the volume's secrets). The hint of
// a teardown said the RPC "carries no capabilities, parameters, context or mount options" and
// that the plugin rejected "an ID, a node or a path", and the others spoke of capabilities: none
// named the secrets the request does carry. Each RPC whose request has a volume's secrets (as
// the CSI protobuf declares it) names them; one that has none does not; nor do the snapshot
// RPCs whose secrets are given with --secret (a delete, a list), which an INVALID_ARGUMENT is
// not to send the user to (TestReconcileInvalidArgumentIsNotASecretsRefusal, in the engine).
func TestInvalidArgumentHintNamesTheSecretsTheRequestCarries(t *testing.T) {
	w := newWorld(t)
	calls := w.calls()
	for _, rpc := range csi.RPCs {
		w.faults.Inject(rpc, csitest.Fault{Code: codes.InvalidArgument, Message: "no", Times: 1})
		err := calls[rpc](context.Background())
		var e *csi.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %v is not a *csi.Error", rpc, err)
		}
		// CreateSnapshot sends its source volume's secrets; the others, those given with --secret.
		snapshots := slices.Contains([]string{csi.RPCDeleteSnapshot, csi.RPCListSnapshots, csi.RPCGetSnapshot}, rpc)
		carries := requestFieldsOf(t, rpc)["secrets"] && !snapshots
		switch names := strings.Contains(e.Hint, "secret"); {
		case carries && !strings.Contains(e.Hint, "check the volume's secrets"):
			t.Errorf("%s, which carries the volume's secrets, answered INVALID_ARGUMENT: the hint does not name them: %q", rpc, e.Hint)
		case !carries && names:
			t.Errorf("%s answered INVALID_ARGUMENT: the hint names secrets: %q", rpc, e.Hint)
		}
	}
}
