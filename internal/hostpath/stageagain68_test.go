package hostpath_test

import (
	"testing"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A stage repeated at the path it is staged at, and a publish repeated at the target it is
// published at, answer OK (CSI's idempotency; the plugin's own doc comments promise it). With
// the root and the orchestrator's paths on one file system (the usual host: / holds both),
// the staging path is then itself a bind of the root's volumes/<id>, and the check for "a
// bind of a directory in the root" (round 68's first version of it) took the plugin's own mount
// for one, and refused both as INVALID_ARGUMENT. Found by helper review68 (a review of that
// round's own change).
func TestStageAndPublishAgainOnTheSameDeviceAnswerOK(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{Root: hostpathtest.ShortDir(t)})
	v, p := c.staged(t, "again")
	if err := c.stage(v, p, nil); err != nil {
		t.Errorf("NodeStageVolume again at %s, where it is staged: %v, want OK", p.staging, err)
	}
	mustOK(t, c.publish(v, p, p.target, false, nil))
	if err := c.publish(v, p, p.target, false, nil); err != nil {
		t.Errorf("NodePublishVolume again at %s, where it is published: %v, want OK", p.target, err)
	}
	mustOK(t, c.unpublish(v, p.target))
	mustOK(t, c.unstage(v, p))
}
