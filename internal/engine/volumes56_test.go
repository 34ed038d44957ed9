package engine

import (
	"errors"
	"regexp"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A create again whose spec changes the secrets is refused, advising `volume register` of the
// spec "with external_id = ... added". The plugin's ID was written with Go's %q, which leaves a
// "${" as it is: in an HCL spec that is a template sequence, and the line as advised did not
// parse. It is written as a spec reads it back (spec.HCLQuoted).
func TestAdviceToRegisterWritesTheExternalIDAsASpecReadsIt(t *testing.T) {
	t.Parallel()
	const hostile = "vol-${x}-%{y}"
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
		m.(*csipb.CreateVolumeResponse).Volume.VolumeId = hostile
	}})
	if v := h.create(volume("v")); v.ExternalID != hostile {
		t.Fatalf("external ID recorded = %q, want the plugin's %q", v.ExternalID, hostile)
	}
	again := volume("v")
	again.Secrets = spec.Secrets{"token": "rotated"}
	_, err := h.e.CreateVolume(h.ctx, again)
	if err == nil {
		t.Fatal("create again with other secrets succeeded")
	}
	line := regexp.MustCompile(`external_id = ("(?:[^"\\]|\\.)*")`).FindStringSubmatch(err.Error())
	if line == nil {
		t.Fatalf("the refusal advises no external_id line: %v", err)
	}
	src := `id = "v"
name = "v"
type = "csi"
plugin_id = "mem"
external_id = ` + line[1] + `
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`
	sv, diags := spec.ParseVolume("v.hcl", []byte(src), spec.VerbRegister)
	if diags.HasErrors() || sv == nil {
		t.Fatalf("the advised line `external_id = %s`, pasted into the spec as the refusal says, does not parse: %v\n(the refusal: %v)", line[1], diags, err)
	}
	if sv.ExternalID != hostile {
		t.Fatalf("the advised line `external_id = %s` reads back as %q, not the volume's external ID %q", line[1], sv.ExternalID, hostile)
	}
}

// A registration again that raises capacity_min and leaves out a capability a live claim
// holds is refused (refuseCapabilityInUse). Before, that came after expandRegistered had sent
// ControllerExpandVolume (and the node expansion) and recorded the larger size: the refused
// registration grew the storage under the claim, and its error said nothing of it.
func TestRegisterRefusedGrowsNothing(t *testing.T) {
	t.Parallel()
	const mib = int64(1 << 20)
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 2 * mib})
	first := regSpec("db", 2*mib)
	first.Capabilities = []spec.Capability{capab(spec.SingleNodeWriter), capab(spec.SingleNodeReaderOnly)}
	if _, err := h.e.RegisterVolume(h.ctx, first); err != nil {
		t.Fatal(err)
	}
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"}) // single-node-writer
	before := h.volumeInfo("db").CapacityBytes
	h.mem.ResetCalls()

	again := regSpec("db", 4*mib)
	again.Capabilities = []spec.Capability{capab(spec.SingleNodeReaderOnly)} // leaves out the claim's
	_, err := h.e.RegisterVolume(h.ctx, again)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("registration again dropping the capability in use: %v, want a conflict", err)
	}
	var sent []string
	for _, c := range h.mem.Calls() {
		if c.RPC == csi.RPCControllerExpandVolume || c.RPC == csi.RPCNodeExpandVolume {
			sent = append(sent, c.RPC)
		}
	}
	v := h.volumeInfo("db")
	if len(sent) > 0 || v.CapacityBytes != before {
		t.Fatalf("the registration was refused (%v), yet it sent %v and the volume is recorded at %d bytes (was %d): "+
			"a refused registration grew the storage under a live claim, and its error does not say so", err, sent, v.CapacityBytes, before)
	}
	if pv, _ := h.mem.Volume("ext-db"); pv.CapacityBytes != 2*mib {
		t.Fatalf("the refused registration left the plugin's volume at %d bytes, want %d", pv.CapacityBytes, 2*mib)
	}
}

// `volume delete` of a volume whose create was interrupted sends CreateVolume again under its
// name (finishCreateForDelete). When the plugin answers with the volume it made, but an answer
// volctl cannot use (below capacity_min), the create's cleanup deletes that volume (DeleteVolume
// answered OK, no longer listed) and forgets the record: the delete asked for is done, nothing is
// left. The command succeeds, as it does when the plugin refuses the create for good; before,
// it failed (exit 1) with the create's error.
func TestDeleteOfAnInterruptedCreateAnsweredUnusablyIsADelete(t *testing.T) {
	t.Parallel()
	h := createWithEveryAnswerLost(t)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Answer: func(m proto.Message) {
		m.(*csipb.CreateVolumeResponse).Volume.CapacityBytes = 1 // below capacity_min: unusable
	}})
	err := h.e.DeleteVolume(h.ctx, "v")
	left := h.pluginVolumeCount()
	_, gone := h.e.Volume(h.ctx, "v")
	if left != 0 || !errors.Is(gone, ErrNotFound) {
		t.Fatalf("after the delete: plugin holds %d volumes, record: %v; want nothing left", left, gone)
	}
	if err != nil {
		t.Fatalf("the delete deleted the storage and forgot the volume, yet failed (exit 1): %v", err)
	}
}
