package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// volume status of a volume whose staging path is still mounted with no staging recorded there
// (a plugin answered NodeUnstageVolume OK and left its mount: engine's
// TestStatusOfAStagingLeftMountedByNodeUnstageNamesIt) says no, and names the path and what to
// do; a volume staged, or on no path, reads as before.
func TestVolumeStatusNamesAStagingLeftMounted(t *testing.T) {
	t.Parallel()
	now := time.Now()
	detail := func(v engine.VolumeInfo) string {
		t.Helper()
		var b bytes.Buffer
		if err := writeVolumeDetail(&b, v, now); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	base := engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", PluginID: "hp"}}
	left := base
	left.StagingLeft = "/var/lib/volctl/staging/hp/db"
	out := detail(left)
	if !lineHas(out, "Staged ", "= no, but "+left.StagingLeft+" is still mounted") || !strings.Contains(out, "`volctl reconcile`") {
		t.Errorf("volume detail with the staging left mounted: want Staged = no naming %s and reconcile:\n%s", left.StagingLeft, out)
	}
	for _, staged := range []bool{true, false} {
		v := base
		v.Staged = staged
		if want := map[bool]string{true: "= yes", false: "= no"}[staged]; !lineHas(detail(v), "Staged ", want) || strings.Contains(detail(v), "still mounted") {
			t.Errorf("volume detail, staged %v: want Staged %s and nothing still mounted:\n%s", staged, want, detail(v))
		}
	}
}
