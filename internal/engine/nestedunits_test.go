package engine

import (
	"reflect"
	"testing"

	"github.com/volctl/volctl/internal/store"
)

// byVolumeOf lists published's volumes in the listed order, and their claims.
func byVolumeOf(published []store.Claim) (volumes []string, byVolume map[string][]int) {
	byVolume = map[string][]int{}
	for i, c := range published {
		if _, ok := byVolume[c.VolumeID]; !ok {
			volumes = append(volumes, c.VolumeID)
		}
		byVolume[c.VolumeID] = append(byVolume[c.VolumeID], i)
	}
	return volumes, byVolume
}

// restorePhases restores claims whose volume_mounts nest outermost first, a phase per depth,
// whatever order they were listed in; claims whose destinations only share a prefix of
// characters ("/srv/a" and "/srv/a-b") or do not nest are restored in the first phase, each
// volume's in the listed order.
func TestRestorePhasesRestoreNestedVolumeMountsOutermostFirst(t *testing.T) {
	t.Parallel()
	claim := claimAt
	published := []store.Claim{
		claim("inner", "/srv/app/logs"),  // 0
		claim("lone"),                    // 1
		claim("sibling", "/srv/app-b"),   // 2
		claim("outer", "/srv/app/"),      // 3
		claim("deep", "/srv/app/logs/x"), // 4
		claim("inner", "/srv/other"),     // 5: inner's second claim, elsewhere
	}
	volumes, byVolume := byVolumeOf(published)
	later := []store.Claim{claim("unfinished", "/srv/app/logs/x/y"), claim("top", "/srv")}
	got, laterAt := restorePhases(published, volumes, byVolume, later)
	want := [][][]int{{{1}}, {{5}, {2}, {3}}, {{0}}, {{4}}, nil}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restorePhases = %v, want %v: lone's first, then (below top's /srv, driven after phase 0) inner's second claim, sibling's and outer's, then inner's at /srv/app/logs, then deep's", got, want)
	}
	if want := [][]int{{1}, nil, nil, nil, {0}}; !reflect.DeepEqual(laterAt, want) {
		t.Fatalf("restorePhases' later claims by phase = %v, want %v: top after phase 0, unfinished (below deep's) after phase 4's none", laterAt, want)
	}
}

// A volume shared by a whole group, above or below each alloc's own, does not put the group in
// one restore worker: each unit is one volume's claims, and a phase never holds a claim below
// one of its own or a later phase's (on main, the 400 claims were one unit).
func TestRestoreSpreadsANestedGroup(t *testing.T) {
	t.Parallel()
	for name, published := range nestedLayouts(200) {
		if name == "disjoint cycles" {
			continue // no shared volume to spread around: the layout is the sort's cost case (TestNestingOrderReadsEachItemOnce)
		}
		volumes, byVolume := byVolumeOf(published)
		phases, _ := restorePhases(published, volumes, byVolume, nil)
		phaseOf := map[int]int{}
		units := 0
		for p, phase := range phases {
			for _, unit := range phase {
				units++
				for _, i := range unit {
					phaseOf[i] = p
					if published[i].VolumeID != published[unit[0]].VolumeID {
						t.Fatalf("%s: one restore worker takes claims of %s and %s (%d claims in all)", name, published[unit[0]].VolumeID, published[i].VolumeID, len(unit))
					}
				}
			}
		}
		if len(phaseOf) != len(published) || len(phases) != 2 || units != 201 {
			t.Fatalf("%s: %d phases, %d units, %d claims, want 2 phases of 201 units (200 allocs' own volumes and the shared one) holding all %d claims", name, len(phases), units, len(phaseOf), len(published))
		}
		for a := range published {
			for b := range published {
				if under(bindDests(published[a].Binds)[0], bindDests(published[b].Binds)[0]) && phaseOf[a] <= phaseOf[b] {
					t.Fatalf("%s: claim %d (%v) is in phase %d, not after claim %d (%v) in phase %d", name, a, published[a].Binds, phaseOf[a], b, published[b].Binds, phaseOf[b])
				}
			}
		}
	}
}
