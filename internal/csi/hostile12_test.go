package csi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin whose CreateVolume answer carries megabytes of volume_context, and whose
// ControllerPublishVolume answers megabytes of publish_context (each far past CSI's 4 KiB for a
// map, each under gRPC's 4 MiB), makes every later NodeStageVolume request, which carries both,
// too large for the plugin to read. The error said "the request carries too much (the volume's
// parameters, context or secrets); make them smaller", of what the user never wrote and cannot
// change. It names the request's large fields, their sizes, and whose they are: the plugin's
// answers, to report to its authors; a spec's parameters, to make smaller.
func TestRequestOverGRPCLimitNamesItsLargeFields(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	h.mem.AddVolume(csi.Volume{ID: "vol-1", CapacityBytes: 1 << 30})
	err := h.client.NodeStageVolume(context.Background(), csi.NodeStageVolumeRequest{
		VolumeID: "vol-1", StagingPath: t.TempDir(), Capability: sensitiveCapability(),
		VolumeContext:  map[string]string{"blob": strings.Repeat("c", 3<<20)},
		PublishContext: map[string]string{"device": strings.Repeat("p", 2<<20)},
	})
	if csi.ClassOf(err) != csi.Final {
		t.Fatalf("NodeStageVolume with 5 MiB of contexts: %v (class %s), want a final error", err, csi.ClassOf(err))
	}
	for _, want := range []string{"volctl's request is ", "its volume_context holds 3145", "publish_context 2097",
		"publish_context is what the plugin answered ControllerPublishVolume", "report it to the plugin's authors"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "parameters") || strings.Contains(err.Error(), "secrets") {
		t.Errorf("error blames fields the request does not carry much of: %v", err)
	}
}
