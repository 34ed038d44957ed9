package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestRegisterOfRecordedStorageAdvisesARegistrationThatKeepsItsImmutableFields: `volctl
// volume register` of a spec whose external_id another volume ("v") records is refused, and
// the refusal advises "to change that volume, register the spec with id = "v"" (naming name,
// namespace and plugin_id too where they differ: asRecorded). But a registration again cannot
// change parameters or topology_request, nor lower capacity_min (checkImmutable), and asRecorded
// names none of them: the spec registered as advised, its parameters (or required topology, or
// capacity_min) not v's, is refused in turn, "parameters cannot be changed ... deregister and
// register it again". The advice does not work as printed, as it did not for plugin_id before
// (TestRegisterOfStorageRecordedThroughASocketMateAdvisesARegistrationThatWorks). Correct: the
// refusal names every field the advised registration must also say (parameters = {...},
// topology_request, capacity_min of at least v's: asRecorded), and the registration so
// advised, followed to the end, is taken.
// Found by helper review81 (register).
func TestRegisterOfRecordedStorageAdvisesARegistrationThatKeepsItsImmutableFields(t *testing.T) {
	t.Parallel()
	zoneA := &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
	for _, tc := range []struct {
		name        string
		edit        func(first, second *spec.Volume)
		wantInError string // what the refusal must name for its advice to work
	}{
		{"parameters", func(first, second *spec.Volume) {
			second.Parameters = map[string]string{"tier": "slow"}
		}, "parameters"},
		{"topology_request", func(first, second *spec.Volume) {
			first.TopologyRequest = zoneA
		}, "topology"},
		{"capacity_min", func(first, second *spec.Volume) {
			first.CapacityMin, second.CapacityMin = 1<<30, 1<<20
		}, "capacity_min"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}} })
			h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
			first, second := registered("v", "ext-1"), registered("w", "ext-1")
			tc.edit(&first, &second)
			if _, err := h.e.RegisterVolume(h.ctx, first); err != nil {
				t.Fatalf("register v: %v", err)
			}
			_, err := h.e.RegisterVolume(h.ctx, second)
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `register the spec with id = "v"`) {
				t.Fatalf("register w of v's storage: %v; want the conflict advising the spec registered with id = \"v\"", err)
			}
			_, after, _ := strings.Cut(err.Error(), `register the spec with id = "v"`)
			advice, _, _ := strings.Cut(after, ";")
			if !strings.Contains(advice, tc.wantInError) {
				t.Fatalf("refusal: %v\nwant its advice to name v's %s, which the registration it advises must keep", err, tc.wantInError)
			}
			// The advice followed to the end: the spec with v's ID and name, and what the advice
			// names of v's, registers.
			second.ID, second.Name = "v", "v"
			second.Parameters, second.TopologyRequest, second.CapacityMin = first.Parameters, first.TopologyRequest, first.CapacityMin
			if _, aerr := h.e.RegisterVolume(h.ctx, second); aerr != nil {
				t.Errorf("refusal: %v\n\nthe registration it advises fails: %v", err, aerr)
			}
		})
	}
}
