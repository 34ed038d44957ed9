package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// A forced detach that stops at a bind with a mount below it (an admin's disk mounted inside
// the alloc's volume_mount destination) leaves every claim recorded, marked releasing, and exits
// 1. Its --json result is printed all the same (it has warnings), and docs/json.md gives
// `failed` as "claims that could not be released (left for reconcile)": the claim left must be
// there, not `"released": []` with no `failed`, which a script reads as a detach that had
// nothing to free. Its first warning, saying it frees the claims, is worded for the stop too.
// Found by helper review65.
func TestForcedDetachStoppedBelowListsTheClaimsFailed(t *testing.T) {
	requireMount(t)
	h := newCLIHarness(t)
	h.createVolume(t, "data", spec.SingleNodeWriter)
	dests := hostpathtest.MountDir(t)
	dest := filepath.Join(dests, "app")
	g := spec.Group{Name: "app", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "data", Type: "csi", Source: "data", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Mounts:  []spec.VolumeMount{{Volume: "data", Destination: dest, PropagationMode: spec.PropagationPrivate}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	below := filepath.Join(dest, "disk")
	if err := os.Mkdir(below, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", below, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting an admin's disk below the destination: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(below, unix.MNT_DETACH) })

	code, out, errOut := h.runReported("volume", "detach", "data", "--force", "--yes", "--json")
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	live, err := h.e.Volume(h.ctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Claims) == 0 {
		t.Fatalf("premise: the forced detach freed the claim (exit %d): this tests nothing", code)
	}
	if code != ExitError {
		t.Errorf("forced detach stopped at a mount below the bind: exit %d, want 1", code)
	}
	var res engine.DetachResult
	if strings.TrimSpace(out) != "" {
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
		}
		for _, w := range res.Warnings {
			if strings.Contains(w, "frees 1 claim") {
				t.Errorf("the forced detach stopped before freeing anything, and a warning says it frees the claim: %q", w)
			}
		}
		if len(res.Failed) != 1 || res.Failed[0].Alloc != "app[0]" {
			t.Errorf("forced detach stopped with alloc \"app[0]\"'s claim left recorded (releasing): --json says released %d, failed %d; want the claim in `failed` (docs/json.md: claims that could not be released)",
				len(res.Released), len(res.Failed))
		}
	}
}
