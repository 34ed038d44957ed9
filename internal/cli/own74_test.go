package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateRefusesAGroupWhoseAllocsDestinationsOverlap: `volctl group run` refuses, as an
// invalid spec (exit 2, "the group's volume_mount destinations overlap across its allocs"),
// a group whose allocs' volume_mount destinations coincide or nest across allocs
// (engine.allocsOverlap): a property of the spec alone, checked before anything is recorded,
// the spec "can never run" (docs/architecture.md). Yet `volctl validate` of the very same
// file prints `valid group "web"` and exits 0: the spec check (spec/group.go, sharedAlloc)
// compares only one alloc's destinations with its own. A user or CI gating on validate is
// told a spec is good that every run refuses as invalid. Two such specs: alloc 1's logs at
// dir/0/logs1, inside alloc 0's data bind dir/0; and, count 11, alloc 0's logs at dir/10,
// which is alloc 10's data. Correct: validate refuses them (exit 2), naming the overlap, as
// the run does — the check belongs with the spec's other destination checks.
// Found by helper review74 (the last own review).
func TestValidateRefusesAGroupWhoseAllocsDestinationsOverlap(t *testing.T) {
	dir := t.TempDir()
	group := func(count, dataDest, logsDest string) string {
		return `group "web" {
  count = ` + count + `
  volume "data" {
    type            = "csi"
    source          = "data"
    per_alloc       = true
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume "logs" {
    type            = "csi"
    source          = "logs"
    per_alloc       = true
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume      = "data"
    destination = "` + dataDest + `"
  }
  volume_mount {
    volume      = "logs"
    destination = "` + logsDest + `"
  }
}
`
	}
	for _, tt := range []struct{ name, src string }{
		{"nested across allocs", group("2", filepath.Join(dir, "{index}"), filepath.Join(dir, "0", "logs{index}"))},
		{"one path for two allocs", group("11", filepath.Join(dir, "{index}"), filepath.Join(dir, "1{index}"))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "web.hcl")
			if err := os.WriteFile(file, []byte(tt.src), 0o600); err != nil {
				t.Fatal(err)
			}
			e := openEngine(t, t.TempDir())
			ctx := context.Background()
			code, _, runErr := runOnOut(ctx, e, "group", "run", file)
			if code != ExitUsage || !strings.Contains(runErr, "overlap across its allocs") {
				t.Fatalf("group run = exit %d\n%s\nwant it refused as an invalid spec (exit 2, destinations overlap across allocs): precondition", code, runErr)
			}
			code, out, errOut := runOnOut(ctx, e, "validate", file)
			if code != ExitUsage {
				t.Errorf("validate of the spec group run refuses as invalid = exit %d\nstdout: %s\nstderr: %s\n"+
					"want exit 2 naming the allocs' overlapping destinations, as group run refuses it:\n%s", code, out, errOut, runErr)
			}
		})
	}
}
