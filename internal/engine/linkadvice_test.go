package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A symlink at a directory of volctl's own on the way to a new claim's target or staging path
// (publish/<alloc>, staging/<plugin>, replaced by hand or by a program) is refused, and the
// claim left for reconcile, with advice the user can follow: remove the link. "Use the path
// it points to" was said, of paths no one chooses.
func TestLinkAboveAClaimsPathsSaysToRemoveIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		link func(state string) string
	}{
		{"publish directory of the alloc", func(state string) string { return filepath.Join(state, publishDir, "a") }},
		{"staging directory of the plugin", func(state string) string { return filepath.Join(state, stagingDir, "mem") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			link := tc.link(h.dir)
			if err := os.MkdirAll(filepath.Dir(link), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(t.TempDir(), link); err != nil {
				t.Fatal(err)
			}
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			if err == nil || strings.Contains(err.Error(), "use the path it points to") || !strings.Contains(err.Error(), "`rm "+link+"`") ||
				!strings.Contains(err.Error(), "volctl reconcile") {
				t.Fatalf("claim with a symlink at %s = %v\nwant it refused saying to remove the link (`rm %s`) and reconcile, not to use the path it points to", link, err, link)
			}
		})
	}
}

// A claim held degraded (published once, its mounts lost, being restored) whose target is now
// a symlink is held, never rolled back: the advice is to remove the link and let reconcile
// restore the mount, not "claim again", which a claim held degraded refuses.
func TestLinkAtADegradedClaimsTargetSaysToReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	target := publishPath(h.dir, "a", "v", false, spec.FileSystem, spec.SingleNodeWriter)
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), target); err != nil {
		t.Fatal(err)
	}
	rep, _ := h.e.Reconcile(h.ctx)
	var said string
	for _, p := range rep.Problems {
		said += p.Message + "\n"
	}
	if !strings.Contains(said, "stays held") || !strings.Contains(said, "`rm "+target+"`") || !strings.Contains(said, "volctl reconcile") || strings.Contains(said, "claim again") {
		t.Errorf("reconcile said:\n%s\nwant the claim held and advice to remove the link (`rm %s`) and reconcile, not to claim again", said, target)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Degraded {
		t.Errorf("claims = %+v, want the claim held, degraded", live)
	}
}
