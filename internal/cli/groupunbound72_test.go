package cli

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// TestGroupStatusShowsABindNotMountedAndTheAllocNotReady: an alloc holding its claims with a
// volume_mount marked not mounted (engine's markUnbound) was counted ready and its destination
// listed as mounted. It is not ready, the destination says "(not bound: see the alloc's error)", and the alloc's
// error (the last run's) has a line of its own. Found by helper review72 (groups).
func TestGroupStatusShowsABindNotMountedAndTheAllocNotReady(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	g := engine.GroupInfo{Name: "web", State: "running", Count: 1, Allocs: []engine.AllocInfo{{
		Name: "web[0]", Error: "volume_mount /logs: a directory holding \"x\"",
		Claims: []engine.ClaimInfo{
			{VolumeID: "data", Alloc: "web[0]", Mode: "write", State: "published", TargetPath: "/t/data",
				Binds: []engine.Bind{{Destination: "/app"}}, CreatedAt: now.Add(-time.Minute)},
			{VolumeID: "logs", Alloc: "web[0]", Mode: "write", State: "published", TargetPath: "/t/logs",
				Binds: []engine.Bind{{Destination: "/logs", Unbound: true}}, CreatedAt: now.Add(-time.Minute)},
		},
	}}}
	if ready, claims := groupCounts(g); ready != 0 || claims != 2 {
		t.Errorf("groupCounts = %d ready, %d claims; want 0 ready (a volume_mount not mounted), 2 claims", ready, claims)
	}
	var detail bytes.Buffer
	if err := writeGroupDetail(&detail, g, now); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`(?m)^Allocs Ready += 0/1$`,
		`(?m)^web\[0\] +logs +write +published +1m +/logs \(not bound: see the alloc's error\) +/t/logs$`,
		`(?m)^web\[0\] +<none> +<none> +volume_mount /logs: a directory holding "x"`,
	} {
		if !regexp.MustCompile(w).MatchString(detail.String()) {
			t.Errorf("group status: no line matching %s in\n%s", w, detail.String())
		}
	}
}
