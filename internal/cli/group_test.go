package cli

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// Group output shows where each volume lands, the bind destinations of its volume_mount
// blocks, not only the claim's publish path; a group without them gets no such column.
func TestGroupOutputShowsBindDestinations(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	claim := func(vol, target string, binds ...engine.Bind) engine.ClaimInfo {
		return engine.ClaimInfo{VolumeID: vol, Alloc: "app[0]", Mode: "write", State: "published",
			TargetPath: target, Binds: binds, CreatedAt: now.Add(-time.Minute)}
	}
	g := engine.GroupInfo{Name: "app", State: "running", Count: 2, Allocs: []engine.AllocInfo{
		{Name: "app[0]", Claims: []engine.ClaimInfo{
			claim("shared", "/s/publish/app[0]/shared/t", engine.Bind{Destination: "/srv/app0"},
				engine.Bind{Destination: "/srv/ro0", ReadOnly: true}),
			claim("scratch", "/s/publish/app[0]/scratch/t"),
		}},
		{Name: "app[1]", Error: "boom"},
	}}
	var run, detail bytes.Buffer
	if err := writeGroupRun(&run, g); err != nil {
		t.Fatal(err)
	}
	if err := writeGroupDetail(&detail, g, now); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, out string
		want      []string
	}{
		{"group run", run.String(), []string{
			`(?m)^ALLOC +VOLUME +MODE +MOUNTED AT +TARGET$`,
			`(?m)^app\[0\] +shared +write +/srv/app0, /srv/ro0 \(read-only\) +/s/publish/app\[0\]/shared/t$`,
			`(?m)^app\[0\] +scratch +write +<none> +/s/publish/app\[0\]/scratch/t$`,
			`(?m)^app\[1\] +<none> +<none> +failed \(see the error\)$`,
		}},
		{"group status", detail.String(), []string{
			`(?m)^ALLOC +VOLUME +MODE +STATE +AGE +MOUNTED AT +TARGET$`,
			`(?m)^app\[0\] +shared +write +published +1m +/srv/app0, /srv/ro0 \(read-only\) +/s/publish/app\[0\]/shared/t$`,
		}},
	} {
		for _, w := range tt.want {
			if !regexp.MustCompile(w).MatchString(tt.out) {
				t.Errorf("%s: no line matching %s in\n%s", tt.name, w, tt.out)
			}
		}
	}

	// Without volume_mount blocks, no MOUNTED AT column.
	g.Allocs[0].Claims = g.Allocs[0].Claims[1:]
	run.Reset()
	if err := writeGroupRun(&run, g); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ALLOC +VOLUME +MODE +TARGET$`).MatchString(run.String()) {
		t.Errorf("group without binds:\n%s", run.String())
	}
}
