package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// A group run's table lists the claims a failed alloc still holds (an earlier run's, which a
// refusal leaves standing), and its line says so: before, a run refused for every alloc read
// "0 of 2 allocs have their volumes" over rows of "failed" alone, of allocs that held them all.
func TestGroupRunShowsTheClaimsAFailedAllocStillHolds(t *testing.T) {
	claim := func(vol, alloc string) engine.ClaimInfo {
		return engine.ClaimInfo{VolumeID: vol, Alloc: alloc, Mode: "write", TargetPath: "/t/" + alloc + "/" + vol}
	}
	for _, c := range []struct {
		name   string
		allocs []engine.AllocInfo
		line   string
		rows   []string
	}{
		{"every alloc refused, holding its claims", []engine.AllocInfo{
			{Name: "db[0]", Claims: []engine.ClaimInfo{claim("data[0]", "db[0]")}, Error: "refused"},
			{Name: "db[1]", Claims: []engine.ClaimInfo{claim("data[1]", "db[1]")}, Error: "refused"},
		}, `Group "db": 0 of 2 allocs have their volumes; the 2 that failed still hold the claims shown`,
			[]string{"db[0]  data[0]  write   /t/db[0]/data[0]", "db[0]  <none>   <none>  failed (see the error)", "db[1]  data[1]  write   /t/db[1]/data[1]"}},
		{"one refused holding, one failed holding nothing, one served", []engine.AllocInfo{
			{Name: "db[0]", Claims: []engine.ClaimInfo{claim("data[0]", "db[0]")}},
			{Name: "db[1]", Claims: []engine.ClaimInfo{claim("data[1]", "db[1]")}, Error: "refused"},
			{Name: "db[2]", Claims: []engine.ClaimInfo{}, Error: "not found"},
		}, `Group "db": 1 of 3 allocs have their volumes; 1 of the 2 that failed still holds the claims shown`,
			[]string{"db[1]  data[1]  write   /t/db[1]/data[1]", "db[2]  <none>   <none>  failed (see the error)"}},
		{"one failed holding", []engine.AllocInfo{
			{Name: "db[0]", Claims: []engine.ClaimInfo{claim("data[0]", "db[0]")}, Error: "refused"},
		}, `Group "db": 0 of 1 allocs have their volumes; the 1 that failed still holds the claims shown`, nil},
		{"failed holding nothing", []engine.AllocInfo{
			{Name: "db[0]", Claims: []engine.ClaimInfo{}, Error: "not found"},
		}, `Group "db": 0 of 1 allocs have their volumes`, nil},
	} {
		var out strings.Builder
		if err := writeGroupRun(&out, engine.GroupInfo{Name: "db", State: "running", Allocs: c.allocs}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		if lines[0] != c.line {
			t.Errorf("%s: line %q; want %q", c.name, lines[0], c.line)
		}
		for _, r := range c.rows {
			if !strings.Contains(out.String(), r) {
				t.Errorf("%s: no row %q in\n%s", c.name, r, out.String())
			}
		}
	}
}
