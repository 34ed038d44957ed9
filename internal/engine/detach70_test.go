package engine

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// cancelInForceDetach is a MountTable that cancels a context the first time a forced detach
// reads the mount table: a SIGINT (main's context) arriving while the detach unmounts a
// claim's paths.
type cancelInForceDetach struct {
	MountTable
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelInForceDetach) MountsUnder(dir string) (map[string]bool, error) {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(1, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, ".(*Engine).forceDetach") {
			c.once.Do(c.cancel)
			break
		}
		if !more {
			break
		}
	}
	return c.MountTable.MountsUnder(dir)
}

// TestInterruptedForcedDetachDoesNotForgetTheAttachment: a forced detach interrupted (Ctrl-C
// cancels main's context) after it unmounted the claims' paths could not read the staging row
// (getStaging failed with the context); it took the volume for unstaged and unattached, and its
// last write (on a context of its own) freed the claims and deleted the staging row. The
// staging it never unmounted and the attachment it never undid were then recorded nowhere:
// no claim, no owed unpublish for reconcile, while the plugin still had the volume published
// to the node. It said so in a warning only ("reading the staging: context canceled") and
// succeeded (exit 0). It stops now, the claims left releasing.
// Found by helper review70.
func TestInterruptedForcedDetachDoesNotForgetTheAttachment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.open(Config{Mounts: &cancelInForceDetach{MountTable: h.mounts, cancel: cancel}})
	h.create(volume("v"))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished || st.StagingPath == "" {
		t.Fatalf("staging before = %+v (%v)", st, ok)
	}
	// Something left in the claim's publish directory keeps it from being removed, so the
	// detach reads the mount table for it (where the interrupt lands).
	if err := os.WriteFile(filepath.Join(filepath.Dir(cl.TargetPath), "left"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Detach(ctx, "v", true)
	t.Logf("Detach(force) = %+v, %v", res, err)
	if ctx.Err() == nil {
		t.Fatalf("the detach never read the mount table: the test did not interrupt it")
	}
	published := len(h.mem.PublishedNodes(h.externalID("v"))) > 0
	st, ok := h.staging("v")
	live := h.liveClaims("v")
	if published && len(live) == 0 && (!ok || !st.ControllerPublished) {
		t.Errorf("after an interrupted forced detach the plugin still has volume %q published to %v, but volctl records neither a claim nor the attachment (staging %+v, found %v): "+
			"nothing will ever unpublish it; err = %v, warnings = %q", "v", h.mem.PublishedNodes(h.externalID("v")), st, ok, err, res.Warnings)
	}
	if err == nil && len(res.Failed) == 0 && !ok {
		if _, staged := h.mem.StagingPath(h.externalID("v")); staged {
			t.Errorf("the detach succeeded (exit 0, %d released) and dropped the staging record while the plugin still has the volume staged, never unmounted", len(res.Released))
		}
	}
}

// TestForcedDetachDoesNotPromiseToKeepAnAttachmentItDrops: a forced detach of a volume whose
// attachment volctl does not record (made outside volctl, or by another orchestrator) sent
// ControllerUnpublishVolume "whatever the records say"; the plugin answered OK and still listed
// the volume published to the node, and forceDetach showed unpublishChecked's "volctl keeps it
// recorded attached" as its warning while it deleted the staging row: reconcile sent nothing,
// and the detach exited 0 promising what it did not do. Found by helper review70.
// Since TestForcedDetachWithNothingRecordedLeavesAnotherStateDirsAttachment (review74), such an
// attachment, listed before anything is sent, is another orchestrator's as a claim takes it,
// and is left: the warning says so and promises nothing, nothing is sent and nothing recorded,
// and reconcile sends nothing either, as the warning says.
func TestForcedDetachDoesNotPromiseToKeepAnAttachmentItDrops(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.attachOutside("v", csi.VolumeCapability{Capability: capab(spec.SingleNodeWriter)}, false)
	h.mem.Reconfigure(func(cfg *csitest.MemConfig) { cfg.UnpublishLater = true })
	h.mem.ResetCalls()
	res, err := h.e.Detach(h.ctx, "v", true)
	t.Logf("Detach(force) = %+v, %v", res, err)
	w := strings.Join(res.Warnings, "\n")
	if !strings.Contains(w, "never recorded") || !strings.Contains(w, "left as it is") {
		t.Errorf("the forced detach's warnings do not say the attachment it never recorded is left: %q", w)
	}
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Errorf("ControllerUnpublishVolume sent %d time(s) for an attachment volctl never recorded", n)
	}
	if st, ok := h.staging("v"); ok && st.ControllerPublished {
		t.Errorf("the forced detach recorded an attachment it says it leaves: %+v", st)
	}
	h.mem.Reconfigure(func(cfg *csitest.MemConfig) { cfg.UnpublishLater = false })
	h.mem.ResetCalls()
	rep, rerr := h.e.Reconcile(h.ctx)
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Errorf("reconcile (%+v, %v) sent ControllerUnpublishVolume %d time(s) for the attachment the detach said it leaves", rep, rerr, n)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 1 {
		t.Errorf("the attachment made outside volctl is gone: published to %v", nodes)
	}
}

// TestForcedDetachUnpublishWarningNamesTheVolume: a forced detach of a volume with no
// recorded attachment still sends ControllerUnpublishVolume; its failure was shown as the
// plugin's error alone: "ControllerUnpublishVolume: Internal: ...", naming
// neither the volume nor the node it was sent for, where every other warning of the detach
// names them (TestForcedDetachWarningNamesTheVolumeAndNodeLeftAttached).
// Found by helper review70.
func TestForcedDetachUnpublishWarningNamesTheVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Internal)
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("Detach(force): %v", err)
	}
	for _, w := range res.Warnings {
		if !strings.Contains(w, `volume "v"`) || !strings.Contains(w, `node "node-1"`) {
			t.Errorf("warning does not name the volume and the node the unpublish was for: %q", w)
		}
	}
}
