package tui

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// The dashboard's release and detach say what another volctl released while they waited for
// the volume (engine's ReleasedMeanwhile), as volume release and detach do: "held no claim"
// and "released 0 claims" said nothing of a claim held as the action began.
func TestReleaseAndDetachSayWhatAnotherReleasedMeanwhile(t *testing.T) {
	rel := action{kind: actRelease, volume: "db", alloc: "web-0"}
	for _, c := range []struct {
		res  engine.ReleaseResult
		want string
	}{
		{engine.ReleaseResult{ReleasedMeanwhile: true}, `the claim of "web-0" on "db" was released by another volctl while this release waited`},
		{engine.ReleaseResult{}, `alloc "web-0" held no claim on "db": nothing to release`},
		{engine.ReleaseResult{Released: true}, `released the claim of "web-0" on "db"`},
	} {
		if got := releaseReport(rel, c.res).text; !strings.Contains(got, c.want) {
			t.Errorf("release %+v: %q; want %q", c.res, got, c.want)
		}
	}
	det := action{kind: actDetach, volume: "db"}
	res := engine.DetachResult{Released: []engine.ClaimInfo{{Alloc: "web-1"}}, ReleasedMeanwhile: []engine.ClaimInfo{{Alloc: "web-0"}}}
	if got := detachReport(det, res, nil).text; !strings.Contains(got, "released 1 claim (another volctl released 1 claim while this detach waited)") {
		t.Errorf("detach with a claim released meanwhile: %q", got)
	}
}
