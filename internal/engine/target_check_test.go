package engine

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin that answers NodePublishVolume with OK but makes the target a symlink (to another
// directory: /etc, or its own mount elsewhere), a file for a file-system volume, or nothing at
// all, does not get the claim recorded published nor its path handed out: the claim fails with
// an error naming the target and what is there, and is rolled back, the release's
// NodeUnpublishVolume asking the plugin to remove what it made. Nothing is written where a
// link points.
func TestNodePublishTargetIsChecked(t *testing.T) {
	elsewhere := t.TempDir() // stands for /etc
	for _, tc := range []struct {
		name string
		make func(target string) error
		att  spec.AttachmentMode
		want string
	}{
		{"symlink", func(target string) error { return os.Symlink(elsewhere, target) }, spec.FileSystem, "is a symlink to \"" + elsewhere + "\""},
		{"symlink/block", func(target string) error { return os.Symlink(elsewhere, target) }, spec.BlockDevice, "is a symlink to \"" + elsewhere + "\""},
		{"nothing", func(string) error { return nil }, spec.FileSystem, "is missing"},
		{"file", func(target string) error { return os.WriteFile(target, nil, 0o600) }, spec.FileSystem, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.MakeTarget = tc.make })
			h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: tc.att}))
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			target := publishPath(h.dir, "a", "v", false, tc.att, spec.SingleNodeWriter)
			if err == nil || !strings.Contains(err.Error(), target+" "+tc.want) || !strings.Contains(err.Error(), "rolled back") {
				t.Fatalf("claim with the target made %s = %v\nwant an error saying %s %s, and the claim rolled back", tc.name, err, target, tc.want)
			}
			if errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid) {
				t.Errorf("error kind: %v is a conflict or invalid request (exit 4 or 2), want a runtime error", err)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("claims after the refused target = %+v, want none (rolled back)", live)
			}
			if got := h.mem.CallCount(csi.RPCNodeUnpublishVolume); got != 1 {
				t.Errorf("NodeUnpublishVolume sent %d times, want once (the plugin asked to remove what it made)", got)
			}
			if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("target after the rollback: %v, want it gone", err)
			}
			if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
				t.Errorf("something was made where the link points: %v", entries)
			}
		})
	}
}
