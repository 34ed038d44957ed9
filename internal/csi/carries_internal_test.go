package csi

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// requestFields is the request message of rpc, as the CSI protobuf declares it.
func requestFields(t *testing.T, rpc string) protoreflect.FieldDescriptors {
	t.Helper()
	svcs := csipb.File_csi_proto.Services()
	for i := range svcs.Len() {
		if m := svcs.Get(i).Methods().ByName(protoreflect.Name(rpc)); m != nil {
			return m.Input().Fields()
		}
	}
	t.Fatalf("%s: the CSI protobuf declares no such RPC", rpc)
	return nil
}

// TestRPCTableCarries: what rpcTable says a request does not carry (noArgs, noVolume,
// noSecrets), which picks the hints that do not speak of it, is what the CSI protobuf's
// request message has: no field at all; no volume_id, no source_volume_id and not
// CreateVolume's name; no secrets.
func TestRPCTableCarries(t *testing.T) {
	for _, rpc := range RPCs {
		fs := requestFields(t, rpc)
		noVolume := fs.ByName("volume_id") == nil && fs.ByName("source_volume_id") == nil && rpc != RPCCreateVolume
		f := rpcTable[rpc]
		if f.noArgs != (fs.Len() == 0) || f.noVolume != noVolume || f.noSecrets != (fs.ByName("secrets") == nil) {
			t.Errorf("%s: rpcTable says noArgs %v, noVolume %v, noSecrets %v; its request has %d fields (noVolume %v, secrets %v)",
				rpc, f.noArgs, f.noVolume, f.noSecrets, fs.Len(), noVolume, fs.ByName("secrets") != nil)
		}
		// noShape and noName (round 34): no capability, parameters or volume_context; no name.
		noShape := fs.ByName("volume_capability") == nil && fs.ByName("volume_capabilities") == nil &&
			fs.ByName("parameters") == nil && fs.ByName("volume_context") == nil
		if f.noShape != noShape || f.noName != (fs.ByName("name") == nil) {
			t.Errorf("%s: rpcTable says noShape %v, noName %v; its request has noShape %v, name %v",
				rpc, f.noShape, f.noName, noShape, fs.ByName("name") != nil)
		}
	}
}
