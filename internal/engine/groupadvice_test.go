package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A delete or deregister of a volume a running group holds is refused; the way out it names is
// the group's stop, as a claim refused by the same group's claim names it (wayOut), not
// `volume release --alloc` of the group's alloc (review31c), which left the group running with
// an alloc that lacks its volume, and the volume then deleted under it. Run as advised, the
// group is stopped and the delete goes through.
func TestClaimedByAGroupNamesTheGroupsStop(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"delete", "deregister"} {
		t.Run(verb, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("data"))
			g := spec.Group{Name: "api", Count: 1, Volumes: []spec.VolumeRequest{
				{Name: "d", Type: "csi", Source: "data", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
			if _, err := h.e.RunGroup(h.ctx, g); err != nil {
				t.Fatal(err)
			}
			var err error
			if verb == "delete" {
				err = h.e.DeleteVolume(h.ctx, "data")
			} else {
				_, err = h.e.DeregisterVolume(h.ctx, "data", false)
			}
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("%s of a volume a group holds = %v, want a conflict", verb, err)
			}
			// What the same holder's refusal to another claim says (wayOut).
			_, cerr := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "other"})
			if !strings.Contains(cerr.Error(), "`volctl group stop api`") {
				t.Fatalf("a claim refused by group api's claim: %v", cerr)
			}
			if !strings.Contains(err.Error(), "`volctl group stop api`") {
				t.Errorf("%s of a volume group %q holds names the wrong way out:\n%v", verb, "api", err)
			}
			for _, wrong := range []string{"volume release", "--force", "volume detach"} {
				if strings.Contains(err.Error(), wrong) {
					t.Errorf("%s of a volume group %q holds advises %q, which leaves the group running without its volume:\n%v", verb, "api", wrong, err)
				}
			}
			// Run as advised: the group stopped, then the volume goes.
			if _, err := h.e.StopGroup(h.ctx, "api"); err != nil {
				t.Fatal(err)
			}
			if verb == "delete" {
				err = h.e.DeleteVolume(h.ctx, "data")
			} else {
				_, err = h.e.DeregisterVolume(h.ctx, "data", false)
			}
			if err != nil {
				t.Fatalf("%s after the advised `volctl group stop api`: %v", verb, err)
			}
		})
	}
}
