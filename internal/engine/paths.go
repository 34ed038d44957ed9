package engine

import (
	"path/filepath"

	"github.com/volctl/volctl/internal/spec"
)

// Mount layout under the state dir (DESIGN.md, "State on disk"): one staging path per volume, as
// the CSI spec requires, and one publish target per claim named by its usage, as Nomad does.
const (
	stagingDir = "staging"
	publishDir = "publish"
)

// stagingPath is where a volume is node-staged: <state>/staging/<plugin>/<volume>.
func stagingPath(stateDir, pluginID, volumeID string) string {
	return filepath.Join(stateDir, stagingDir, pluginID, volumeID)
}

// publishPath is a claim's NodePublishVolume target:
// <state>/publish/<alloc>/<volume>/<ro|rw>-<attachment>-<access>.
func publishPath(stateDir, alloc, volumeID string, readOnly bool, att spec.AttachmentMode, acc spec.AccessMode) string {
	return filepath.Join(stateDir, publishDir, alloc, volumeID, usageName(readOnly, att, acc))
}

func usageName(readOnly bool, att spec.AttachmentMode, acc spec.AccessMode) string {
	rw := "rw"
	if readOnly {
		rw = "ro"
	}
	return rw + "-" + string(att) + "-" + string(acc)
}
