package cli

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
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
			// The failure in the TARGET column, as without binds (it stood under MOUNTED AT).
			`(?m)^app\[1\] +<none> +<none> +<none> +failed \(see the error\)$`,
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

// TestGroupRunExitCodeKeepsTheClaimsKind: an alloc whose claim is refused because another alloc
// holds the volume is a conflict, and group run exits 4 as volume claim does (README: 4
// conflict, claim refused); a volume that does not exist stays a runtime error (1). The
// failures of several allocs are one error, each alloc's kept: the conflict wins.
func TestGroupRunExitCodeKeepsTheClaimsKind(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "held", spec.SingleNodeWriter)
	h.claim(t, "held", "other")
	h.createVolume(t, "mix[0]", spec.SingleNodeWriter)
	h.claim(t, "mix[0]", "other")
	group := func(count int, source string, perAlloc bool) []byte {
		return fmt.Appendf(nil, `group "web" {
  count = %d
  volume "d" {
    type            = "csi"
    source          = %q
    per_alloc       = %v
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
}`, count, source, perAlloc)
	}
	for _, tc := range []struct {
		name string
		src  []byte
		code int
		want string
	}{
		{"refused", group(1, "held", false), ExitConflict, `alloc "web[0]": claim "held" for alloc "web[0]": volume "held" is single-node-writer and alloc "other"`},
		{"missing", group(1, "nosuch", false), ExitError, `volume "nosuch" not found`},
		// web[0]'s volume "mix[0]" is held by another alloc, web[1]'s "mix[1]" does not exist.
		{"refused and missing", group(2, "mix", true), ExitConflict, `alloc "web[1]": claim "mix[1]" for alloc "web[1]": volume "mix[1]" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			err := groupRunRun(h.ctx, &GroupRunOptions{IO: ios, Engine: h.engine, File: "web.hcl",
				ReadFile: func(string) ([]byte, error) { return tc.src, nil }})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("group run = %v, want an error holding %s", err, tc.want)
			}
			if code := ExitCode(err); code != tc.code {
				t.Errorf("group run exits %d, want %d: %v", code, tc.code, err)
			}
		})
	}
}
