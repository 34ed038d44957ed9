package engine

import (
	"fmt"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
)

// MountTable answers which paths under the state dir are mount points. Reconcile reads it once
// per pass, not once per claim, so restoring 1,000 claims costs one read of the kernel's table.
type MountTable interface {
	// MountsUnder returns every mount point at or below dir.
	MountsUnder(dir string) (map[string]bool, error)
}

// kernelMounts reads the kernel's mount table (/proc/self/mountinfo).
type kernelMounts struct{}

func (kernelMounts) MountsUnder(dir string) (map[string]bool, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(filepath.Clean(dir)))
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	out := make(map[string]bool, len(mounts))
	for _, m := range mounts {
		out[m.Mountpoint] = true
	}
	return out, nil
}
