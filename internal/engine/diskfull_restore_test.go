package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// The state dir fills up right after each node RPC of a restore (reconcile after a reboot took
// the mounts) answered OK: reconcile reports the disk full, naming the database, and records no
// more than the plugin did; once space is freed, the claim's release (not another reconcile)
// leaves the plugin with nothing staged or published, and reconcile after it nothing to do.
func TestDiskFullDuringARestoreThenRelease(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		t.Run(rpc, func(t *testing.T) {
			t.Parallel() // each on a tmpfs of its own
			h, after, free := diskFullHarness(t)
			h.claimThenReboot("db", "web-0", "single-node-writer")
			*after = rpc
			rep, err := h.e.Reconcile(h.ctx)
			msgs := []string{}
			if err != nil {
				msgs = append(msgs, err.Error())
			}
			for _, p := range rep.Problems {
				msgs = append(msgs, p.Message)
			}
			all := strings.Join(msgs, "\n")
			if !strings.Contains(all, "disk is full") || !strings.Contains(all, h.dir) {
				t.Fatalf("reconcile on a state dir filled after %s: %v, problems %+v; want it to say the disk is full, naming %s", rpc, err, rep.Problems, h.dir)
			}
			free()
			h.release("db", "web-0")
			id := h.externalID("db")
			if got := h.mem.Targets(id); len(got) != 0 {
				t.Errorf("plugin's targets after the release = %v, want none", got)
			}
			if p, ok := h.mem.StagingPath(id); ok {
				t.Errorf("plugin still stages the volume at %s after the release", p)
			}
			if got := h.mem.PublishedNodes(id); len(got) != 0 {
				t.Errorf("plugin's attachments after the release = %v, want none", got)
			}
			rep, err = h.e.Reconcile(h.ctx)
			if err != nil || len(rep.Problems) != 0 {
				t.Fatalf("reconcile after the release: %v, problems %+v", err, rep.Problems)
			}
		})
	}
}
