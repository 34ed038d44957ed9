package engine

import (
	"reflect"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// nestedUnits puts the claims of volumes whose volume_mounts nest (at or below one another) in
// one restore worker's unit, outermost bind first, whatever order they were listed in; volumes
// whose destinations only share a prefix of characters ("/srv/a" and "/srv/a-b") or do not nest
// stay apart, each in the listed order.
func TestNestedUnitsJoinNestedVolumeMountsOutermostFirst(t *testing.T) {
	claim := func(vol string, dests ...string) store.Claim {
		c := store.Claim{VolumeID: vol}
		for _, d := range dests {
			c.Binds = append(c.Binds, spec.VolumeMount{Destination: d})
		}
		return c
	}
	published := []store.Claim{
		claim("inner", "/srv/app/logs"),  // 0
		claim("lone"),                    // 1
		claim("sibling", "/srv/app-b"),   // 2
		claim("outer", "/srv/app/"),      // 3
		claim("deep", "/srv/app/logs/x"), // 4
		claim("inner", "/srv/other"),     // 5: inner's second claim, elsewhere
	}
	var volumes []string
	byVolume := map[string][]int{}
	for i, c := range published {
		if _, ok := byVolume[c.VolumeID]; !ok {
			volumes = append(volumes, c.VolumeID)
		}
		byVolume[c.VolumeID] = append(byVolume[c.VolumeID], i)
	}
	got := nestedUnits(published, volumes, byVolume)
	if len(got) != 3 || !reflect.DeepEqual(got[1], []int{1}) || !reflect.DeepEqual(got[2], []int{2}) {
		t.Fatalf("nestedUnits = %v, want three units: outer's, inner's and deep's claims; lone's; sibling's", got)
	}
	at := map[int]int{}
	for k, i := range got[0] {
		at[i] = k
	}
	if len(got[0]) != 4 || len(at) != 4 || at[3] > at[0] || at[0] > at[4] {
		t.Fatalf("nestedUnits' first unit = %v, want claims 0, 3, 4 and 5, outer's (3) before inner's (0) before deep's (4)", got[0])
	}
}
