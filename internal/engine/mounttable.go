package engine

import (
	"fmt"

	"github.com/moby/sys/mountinfo"
)

// MountTable answers which paths are mount points. Reconcile reads it once per pass, not once per
// claim, so restoring 1,000 claims costs one read of /proc/self/mountinfo.
type MountTable interface {
	// Mounted returns the set of mount points among paths.
	Mounted(paths []string) (map[string]bool, error)
}

// kernelMounts reads the kernel's mount table.
type kernelMounts struct{}

func (kernelMounts) Mounted(paths []string) (map[string]bool, error) {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return !want[m.Mountpoint], false
	})
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	out := make(map[string]bool, len(mounts))
	for _, m := range mounts {
		out[m.Mountpoint] = true
	}
	return out, nil
}
