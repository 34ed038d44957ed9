package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A write claim asking for the mount flag "ro" gets a mount it cannot write, and holds the
// volume as its writer all the same: warned of, as a spec's read-only mount flag on a volume
// claims may write is (validate's "Read-only mount flag"), and claimed as asked. A read claim
// with it, or a write claim with other flags ("rw", "errors=remount-ro"), is not warned of.
func TestWriteClaimWithTheReadOnlyMountFlagIsWarnedOf(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.MultiNodeMultiWriter)
	for _, c := range []struct {
		alloc    string
		readOnly bool
		flags    []string
		warned   bool
	}{
		{"a", false, []string{"noatime", "ro"}, true},
		{"b", true, []string{"ro"}, false},
		{"c", false, []string{"rw", "errors=remount-ro", "ro=1"}, false},
	} {
		ios, _, out, errOut := iostreams.Test()
		err := volumeClaimRun(h.ctx, &VolumeClaimOptions{IO: ios, Engine: h.engine, VolumeID: "db", Alloc: c.alloc, ReadOnly: c.readOnly, MountFlags: c.flags})
		if err != nil || out.Len() == 0 {
			t.Fatalf("claim %s with %q: %v (stdout %q); want it claimed", c.alloc, c.flags, err, out)
		}
		if got := strings.Contains(errOut.String(), "Warning: --mount-flag ro mounts the volume read-only, though this claim is for writing"); got != c.warned {
			t.Errorf("claim %s (read-only %v) with %q: warned %v (stderr %q), want %v", c.alloc, c.readOnly, c.flags, got, errOut, c.warned)
		}
	}
}
