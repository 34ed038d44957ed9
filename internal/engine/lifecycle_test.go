package engine

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

func TestLifecyclePublishAndReleasePaths(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("db")
	sv.MountOptions = &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime"}}
	v := h.create(sv)
	if v.ExternalID == "" || v.State != "ready" {
		t.Fatalf("created volume: %+v", v)
	}
	h.mem.ResetCalls()

	cl := h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0",
		MountOptions: &spec.MountOptions{FSType: "xfs", MountFlags: spec.MountFlags{"nodev", "sync"}}})
	// ListVolumes: whether the volume is attached to the node already, not by volctl (attachedAlready).
	if got, want := h.rpcs(), []string{csi.RPCListVolumes, csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}; !reflect.DeepEqual(got, want) {
		t.Fatalf("publish path RPCs = %v, want %v", got, want)
	}
	wantTarget := filepath.Join(h.dir, "publish", "web-0", "db", "rw-file-system-single-node-writer")
	if cl.TargetPath != wantTarget || cl.State != "published" || cl.Mode != "write" {
		t.Fatalf("claim = %+v, want published write claim at %s", cl, wantTarget)
	}
	if _, err := os.Stat(wantTarget); err != nil {
		t.Fatalf("target not created by the plugin: %v", err)
	}

	cp, _ := csitest.LastRequest[csi.ControllerPublishVolumeRequest](h.mem)
	if cp.NodeID != "node-1" || cp.VolumeID != v.ExternalID || cp.Secrets["token"] != "s3cr3t" {
		t.Errorf("ControllerPublishVolume got node %q volume %q secrets %v", cp.NodeID, cp.VolumeID, cp.Secrets.Plain())
	}
	ns, _ := csitest.LastRequest[csi.NodeStageVolumeRequest](h.mem)
	np, _ := csitest.LastRequest[csi.NodePublishVolumeRequest](h.mem)
	stagingWant := filepath.Join(h.dir, "staging", "mem", "db")
	if ns.StagingPath != stagingWant || np.StagingPath != stagingWant {
		t.Errorf("staging path: stage %q publish %q, want %q", ns.StagingPath, np.StagingPath, stagingWant)
	}
	if len(ns.PublishContext) == 0 || !reflect.DeepEqual(ns.PublishContext, np.PublishContext) {
		t.Errorf("publish context not passed on: stage %v publish %v", ns.PublishContext, np.PublishContext)
	}
	for name, got := range map[string]csi.VolumeCapability{"stage": ns.Capability, "publish": np.Capability} {
		if got.MountOptions == nil || got.MountOptions.FSType != "xfs" || !slices.Equal(got.MountOptions.MountFlags.Plain(), []string{"nodev", "sync"}) {
			t.Errorf("%s mount options = %+v, want the request's fs_type and flags replacing the volume's", name, got.MountOptions)
		}
	}
	if np.ReadOnly || np.Secrets["token"] != "s3cr3t" || ns.Secrets["token"] != "s3cr3t" {
		t.Errorf("publish read-only %v, secrets not passed", np.ReadOnly)
	}
	if st, ok := h.staging("db"); !ok || !st.Staged || !st.ControllerPublished {
		t.Errorf("staging row = %+v, %v", st, ok)
	}

	// Claiming again for the same alloc is idempotent: same target, no RPC.
	h.mem.ResetCalls()
	again := h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if again.TargetPath != cl.TargetPath || again.ID != cl.ID || len(h.rpcs()) != 0 {
		t.Fatalf("repeat claim = %+v, rpcs %v", again, h.rpcs())
	}

	h.mem.ResetCalls()
	res, err := h.e.Release(h.ctx, "db", "web-0")
	if err != nil || !res.Released || res.Claim.Outcome != "released" || res.Claim.FreedAt.IsZero() || res.Claim.ID != cl.ID {
		t.Fatalf("release = %+v, %v", res, err)
	}
	// ListVolumes: the plugin (LIST_VOLUMES_PUBLISHED_NODES) is asked whether it still lists
	// the volume published to the node (unpublishChecked).
	if got, want := h.rpcs(), []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume, csi.RPCListVolumes}; !reflect.DeepEqual(got, want) {
		t.Fatalf("release path RPCs = %v, want %v", got, want)
	}
	if n := len(h.liveClaims("db")); n != 0 {
		t.Fatalf("%d live claims after release", n)
	}
	if _, ok := h.staging("db"); ok {
		t.Error("staging row left after the last release")
	}
	hist, _ := h.e.History(h.ctx, "db", 0)
	if len(hist) != 1 || hist[0].Outcome != "released" {
		t.Fatalf("history = %+v", hist)
	}
	info, _ := h.e.Volume(h.ctx, "db")
	if info.AccessMode != "" || info.AttachmentMode != "" {
		t.Errorf("volume modes not cleared by the last release: %q %q", info.AccessMode, info.AttachmentMode)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "publish", "web-0")); !os.IsNotExist(err) {
		t.Errorf("publish dirs left behind: %v", err)
	}

	// Releasing a claim that does not exist is a no-op.
	res, err = h.e.Release(h.ctx, "db", "web-0")
	if err != nil || res.Released {
		t.Fatalf("second release = %+v, %v", res, err)
	}
}

func TestCapabilityGating(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*csitest.MemConfig)
		want   []string
		staged bool
	}{
		{"no controller publish", func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false },
			[]string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume, csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume}, true},
		{"no staging", func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false },
			// ListVolumes first: whether the volume is attached already, not by volctl
			// (attachedAlready); last: whether it still is after the unpublish.
			[]string{csi.RPCListVolumes, csi.RPCControllerPublishVolume, csi.RPCNodePublishVolume, csi.RPCNodeUnpublishVolume, csi.RPCControllerUnpublishVolume, csi.RPCListVolumes}, false},
		{"node only RPCs", func(c *csitest.MemConfig) {
			c.Controller.PublishUnpublishVolume = false
			c.Node.StageUnstageVolume = false
		}, []string{csi.RPCNodePublishVolume, csi.RPCNodeUnpublishVolume}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.mutate)
			h.create(volume("v"))
			h.mem.ResetCalls()
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			np, _ := csitest.LastRequest[csi.NodePublishVolumeRequest](h.mem)
			if (np.StagingPath != "") != tt.staged {
				t.Errorf("NodePublishVolume staging path %q, staged %v", np.StagingPath, tt.staged)
			}
			h.release("v", "a")
			if got := h.rpcs(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RPCs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStagingIsSharedAndReferenceCounted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("shared", capab(spec.MultiNodeMultiWriter)))
	h.mem.ResetCalls()
	a := h.claim(ClaimRequest{VolumeID: "shared", Alloc: "a"})
	// A reader with its own mount options: they apply to its NodePublishVolume only.
	b := h.claim(ClaimRequest{VolumeID: "shared", Alloc: "b", ReadOnly: true,
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}}})
	if a.TargetPath == b.TargetPath {
		t.Fatal("two claims share a target path")
	}
	if !strings.HasSuffix(b.TargetPath, "ro-file-system-multi-node-multi-writer") {
		t.Errorf("read claim target %q", b.TargetPath)
	}
	if n := h.mem.CallCount(csi.RPCNodeStageVolume); n != 1 {
		t.Fatalf("NodeStageVolume called %d times for two claims, want 1", n)
	}
	// The attachment is per volume and node: the second claim shares it.
	if n := h.mem.CallCount(csi.RPCControllerPublishVolume); n != 1 {
		t.Fatalf("ControllerPublishVolume called %d times for two claims, want 1", n)
	}
	if np := csitest.Requests[csi.NodePublishVolumeRequest](h.mem); len(np) == 2 && !reflect.DeepEqual(np[0].PublishContext, np[1].PublishContext) {
		t.Fatalf("the second claim did not get the attachment's publish context: %v vs %v", np[0].PublishContext, np[1].PublishContext)
	}
	np := csitest.Requests[csi.NodePublishVolumeRequest](h.mem)
	if len(np) != 2 || np[0].ReadOnly || !np[1].ReadOnly {
		t.Fatalf("NodePublishVolume read-only flags: %+v", np)
	}

	h.mem.ResetCalls()
	h.release("shared", "a")
	if got := h.rpcs(); !reflect.DeepEqual(got, []string{csi.RPCNodeUnpublishVolume}) {
		t.Fatalf("first release RPCs = %v: the staging and attachment are still used by b", got)
	}
	h.release("shared", "b")
	if got := h.rpcs(); !reflect.DeepEqual(got, []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume, csi.RPCListVolumes}) {
		t.Fatalf("RPCs after the last release = %v", got)
	}
}

func TestAdmissionRules(t *testing.T) {
	t.Parallel()
	type step struct {
		alloc    string
		readOnly bool
		want     error // nil, ErrConflict or ErrInvalid
	}
	tests := []struct {
		mode  spec.AccessMode
		steps []step
	}{
		{spec.SingleNodeReaderOnly, []step{{"w", false, ErrInvalid}, {"r1", true, nil}, {"r2", true, ErrConflict}}},
		{spec.SingleNodeWriter, []step{{"w1", false, nil}, {"w2", false, ErrConflict}, {"r1", true, ErrConflict}}},
		{spec.SingleNodeWriter, []step{{"r1", true, nil}, {"w1", false, ErrConflict}}},
		{spec.MultiNodeReaderOnly, []step{{"r1", true, nil}, {"r2", true, nil}, {"w", false, ErrInvalid}}},
		{spec.MultiNodeSingleWriter, []step{{"w1", false, nil}, {"r1", true, nil}, {"w2", false, ErrConflict}, {"r2", true, nil}}},
		{spec.MultiNodeMultiWriter, []step{{"w1", false, nil}, {"w2", false, nil}, {"r1", true, nil}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v", capab(tt.mode)))
			for _, s := range tt.steps {
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: s.alloc, ReadOnly: s.readOnly})
				switch {
				case s.want == nil && err != nil:
					t.Fatalf("claim by %s: %v", s.alloc, err)
				case s.want != nil && !errors.Is(err, s.want):
					t.Fatalf("claim by %s: err %v, want %v", s.alloc, err, s.want)
				case errors.Is(err, ErrConflict) && !strings.Contains(err.Error(), `alloc "`):
					t.Fatalf("conflict does not name the holder: %v", err)
				case errors.Is(err, ErrConflict) && !strings.Contains(err.Error(), "(`volctl volume release v --alloc "):
					t.Fatalf("conflict does not say what releases the holder: %v", err)
				}
			}
			// A refused claim leaves no trace.
			for _, c := range h.liveClaims("v") {
				for _, s := range tt.steps {
					if c.Alloc == s.alloc && s.want != nil {
						t.Errorf("refused alloc %q has a live claim", s.alloc)
					}
				}
			}
		})
	}
}

func TestClaimModesMustMatchACapabilityAndTheCurrentMode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter),
		spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.BlockDevice},
		capab(spec.MultiNodeReaderOnly)))

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "x", AccessMode: spec.SingleNodeWriter})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no capability matching") {
		t.Fatalf("claim with a mode the volume lacks: %v", err)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b", AttachmentMode: spec.BlockDevice})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "in use as multi-node-multi-writer/file-system") {
		t.Fatalf("claim with another attachment mode while staged: %v", err)
	}
	// Without explicit modes a reader follows the volume's current mode.
	r := h.claim(ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
	if r.AccessMode != spec.MultiNodeMultiWriter {
		t.Errorf("reader got %s, want the current mode", r.AccessMode)
	}
	// The alloc holding a write claim cannot claim again as a reader.
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", ReadOnly: true}); !errors.Is(err, ErrConflict) {
		t.Fatalf("changing a held claim's mode: %v", err)
	}
	h.release("v", "a")
	h.release("v", "r")
	info, _ := h.e.Volume(h.ctx, "v")
	if info.AccessMode != "" {
		t.Fatalf("mode not cleared: %q", info.AccessMode)
	}
	// Free again: the block-device capability is usable now.
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b", AttachmentMode: spec.BlockDevice})
}

func TestClaimRefusesBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	for _, alloc := range []string{"", "..", "a/b", "-x"} {
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: alloc}); !errors.Is(err, ErrInvalid) {
			t.Errorf("alloc %q: %v", alloc, err)
		}
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "nope", Alloc: "a"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown volume: %v", err)
	}
}

func TestClaimStatesAreCommittedWithTheLastError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCNodePublishVolume, 14) // Unavailable
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || !strings.Contains(err.Error(), `claim "v" for alloc "a": NodePublishVolume: Unavailable`) {
		t.Fatalf("error = %v", err)
	}
	cl := h.liveClaims("v")
	if len(cl) != 1 || cl[0].State != store.ClaimNodeStaged || !cl[0].NeedsReconcile ||
		cl[0].LastRPC != csi.RPCNodePublishVolume || cl[0].LastCode != "Unavailable" || cl[0].LastError == "" {
		t.Fatalf("claim after retries ran out = %+v", cl)
	}
}
