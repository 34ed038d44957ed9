package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestUnbindIsNotMadeBusyByAProcessThisOneStarts: a release opens each volume_mount's
// destination, a descriptor on the bind itself, and closes it just before it unmounts it. A
// process this one starts meanwhile (the agent starts plugins while it releases claims) is
// forked with a copy of every descriptor open then, and keeps them until its exec closes them:
// the bind's unmount, made between, was EBUSY, and the release failed, the claim left
// unpublishing, for a holder gone a moment later. Real mounts, as root.
func TestUnbindIsNotMadeBusyByAProcessThisOneStarts(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/bin/true"); err != nil {
		t.Skipf("the processes this test starts are /bin/true: %v", err)
	}
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	dest := filepath.Join(hostpathtest.MountDir(t), "alloc")
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // a process started and gone, again and again, as the agent starts plugins
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
				_ = exec.Command("/bin/true").Run()
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	// Before the change, one of the first 20 releases failed, in each of five runs.
	for i := range 60 {
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a",
			Binds: []spec.VolumeMount{{Volume: "data", Destination: dest, PropagationMode: spec.PropagationPrivate}}}); err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		if _, err := h.e.Release(h.ctx, "data", "a"); err != nil {
			t.Fatalf("release %d, with processes started meanwhile: %v", i, err)
		}
	}
}
