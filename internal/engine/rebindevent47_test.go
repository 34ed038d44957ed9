package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// A volume_mount found unmounted and bound again, by a group run again (a claim again) or by
// reconcile, is recorded in the event log ("restore", as a target restored is): before, the
// run bound it and nothing anywhere said it had been found unmounted. A run again that finds
// it mounted records nothing. Real mounts, as root.
func TestVolumeMountBoundAgainIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	dest := filepath.Join(hostpathtest.MountDir(t), "dest")
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: dest}}}
	bound := func() []string {
		t.Helper()
		evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "restore", VolumeID: "data"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range evs {
			if strings.Contains(ev.Message, "bound volume_mount "+dest+" again (it was not mounted)") && ev.Alloc == "web[0]" {
				out = append(out, ev.Message)
			}
		}
		return out
	}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil { // everything mounted: nothing to say
		t.Fatal(err)
	}
	if evs := bound(); len(evs) != 0 {
		t.Fatalf("events after a run again with everything mounted: %q, want none", evs)
	}
	for i, again := range []func() error{
		func() error { _, err := h.e.RunGroup(h.ctx, g); return err },
		func() error { _, err := h.e.Reconcile(h.ctx); return err },
	} {
		if err := unix.Unmount(dest, 0); err != nil {
			t.Fatal(err)
		}
		if err := again(); err != nil {
			t.Fatal(err)
		}
		if evs := bound(); len(evs) != i+1 {
			t.Errorf("after binding it again %d time(s), events %q; want one per time", i+1, evs)
		}
	}
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatal(err)
	}
}
