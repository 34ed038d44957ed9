package engine

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestVolumeMountAboveAnotherAllocsUnboundDestinationIsRefused: alloc inner[0] held a claim
// bound at DIR/x/inner, its bind unmounted by hand (or not restored yet after a reboot); a run of
// group outer with its volume_mount at DIR/x, above it, was admitted and bound, and the
// `volctl reconcile` that `group status` advises for inner[0] then bound inner[0]'s volume
// inside outer[0]'s volume (its directory made there), and outer's stop could not unbind DIR/x
// while it was. Admission refuses a destination below another alloc's live volume_mount
// (refuseInside) but not one above it, leaving that order to the bind's mountsBelow, which sees
// only what is mounted now. docs/specs.md promises a destination "inside another alloc's
// volume_mount" is refused, and refuseInside's own comment why: "its bind would make its
// directory inside that volume (another's data, or the other alloc's own), and hold that
// claim's release up (its unmount busy) for as long as it is bound". Found by helper review73.
func TestVolumeMountAboveAnotherAllocsUnboundDestinationIsRefused(t *testing.T) {
	t.Parallel()
	h, outerDest, innerDest := nestedDestinations(t)
	inner := spec.Group{Name: "inner", Count: 1, Volumes: []spec.VolumeRequest{writerBlock("d", "a")},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: innerDest}}}
	if _, err := h.e.RunGroup(h.ctx, inner); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "inner") })
	// The bind unmounted by hand: the claim is held, its volume_mount recorded at innerDest.
	if err := unix.Unmount(innerDest, 0); err != nil {
		t.Fatal(err)
	}
	outer := spec.Group{Name: "outer", Count: 1, Volumes: []spec.VolumeRequest{writerBlock("d", "b")},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: outerDest}}}
	_, runErr := h.e.RunGroup(h.ctx, outer)
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "outer") })
	// What group status says of inner[0] (not bound) is followed: reconcile binds it again.
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Logf("reconcile: %v", err)
	}
	if runErr == nil && hostpathtest.Mounted(t, outerDest) && hostpathtest.Mounted(t, innerDest) {
		t.Errorf("group outer's volume_mount %s, above alloc inner[0]'s held volume_mount %s (not bound at the run), was admitted and bound; "+
			"reconcile then bound inner[0]'s volume a inside outer[0]'s volume b: want the run of outer refused (a conflict naming inner[0]), "+
			"as one below another alloc's volume_mount is", outerDest, innerDest)
		if _, err := h.e.StopGroup(h.ctx, "outer"); err != nil {
			t.Errorf("and the stop of outer failed: %v", err)
		}
		return
	}
	if runErr == nil || !strings.Contains(runErr.Error(), `alloc "inner[0]"`) {
		t.Fatalf("run of outer above inner[0]'s volume_mount: %v; want a conflict naming inner[0]", runErr)
	}
	// Its advice: release that claim first; then outer runs, bound.
	if _, err := h.e.StopGroup(h.ctx, "inner"); err != nil {
		t.Fatalf("stop of inner: %v", err)
	}
	if _, err := h.e.RunGroup(h.ctx, outer); err != nil {
		t.Fatalf("run of outer once inner is stopped: %v", err)
	}
	if !hostpathtest.Mounted(t, outerDest) {
		t.Errorf("outer's volume_mount %s is not bound after its run", outerDest)
	}
}

// TestTwoGroupsRunTogetherDoNotBindOneInsideTheOther: group inner (volume a at DIR/x/inner)
// and group outer (volume b at DIR/x) were run at once, by two volctl processes. inner[0]'s
// claim was admitted first and was still being published (its NodePublishVolume in flight)
// when outer[0]'s was admitted: refuseInside looks only for a destination below another
// alloc's (outer's is above inner's), and outer's bind found nothing mounted below DIR/x yet,
// so both runs succeeded, inner[0]'s volume bound inside outer[0]'s volume (its directory
// made there), and outer's stop then failed, its unmount busy. docs/specs.md promises a
// destination inside another alloc's volume_mount is refused; two groups run at once end
// with one. Found by helper review73.
func TestTwoGroupsRunTogetherDoNotBindOneInsideTheOther(t *testing.T) {
	t.Parallel()
	h, outerDest, innerDest := nestedDestinations(t)
	// A second volctl on the same state dir.
	other, err := Open(h.ctx, Config{StateDir: h.state, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Gate: gate, Times: 1, When: func(m proto.Message) bool {
		r := m.ProtoReflect()
		return strings.Contains(r.Get(r.Descriptor().Fields().ByName("target_path")).String(), "/inner[0]/a/")
	}})
	inner := spec.Group{Name: "inner", Count: 1, Volumes: []spec.VolumeRequest{writerBlock("d", "a")},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: innerDest}}}
	done := make(chan error, 1)
	go func() { _, err := other.RunGroup(h.ctx, inner); done <- err }()
	opened := false
	t.Cleanup(func() {
		if !opened {
			close(gate)
			<-done
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for h.faults.Held() < 1 {
		select {
		case err := <-done:
			opened = true
			close(gate)
			t.Fatalf("group run of inner returned before its NodePublishVolume of a was held: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			opened = true
			close(gate)
			t.Fatalf("inner's NodePublishVolume of a was never held: %v", <-done)
		}
		time.Sleep(time.Millisecond)
	}
	outer := spec.Group{Name: "outer", Count: 1, Volumes: []spec.VolumeRequest{writerBlock("d", "b")},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: outerDest}}}
	outerDone := make(chan error, 1)
	go func() { _, err := h.e.RunGroup(h.ctx, outer); outerDone <- err }()
	var outerErr error
	select {
	case outerErr = <-outerDone:
		opened = true
		close(gate)
	case <-time.After(20 * time.Second):
		// outer waits for inner's claim: let inner go on, outer is then run after it.
		opened = true
		close(gate)
		outerErr = <-outerDone
	}
	innerErr := <-done
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "outer") })
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "inner") })
	if outerErr == nil && innerErr == nil && hostpathtest.Mounted(t, outerDest) && hostpathtest.Mounted(t, innerDest) {
		t.Errorf("groups inner (volume_mount %s) and outer (volume_mount %s, above it) run at once both succeeded: "+
			"inner[0]'s volume a is bound inside outer[0]'s volume b; want one of them refused, as a volume_mount inside another alloc's is", innerDest, outerDest)
		if _, err := h.e.StopGroup(h.ctx, "outer"); err != nil {
			t.Errorf("and the stop of outer failed: %v", err)
		}
	}
}

// nestedDestinations is a hostpath engine with writer volumes "a" and "b", and two
// destinations, the second inside the first (DIR/x and DIR/x/inner), unmounted when the test
// ends.
func nestedDestinations(t *testing.T) (h *hostpathEngine, outer, inner string) {
	t.Helper()
	h = newHostpathEngine(t)
	h.createWriterVolume(t, "a")
	h.createWriterVolume(t, "b")
	outer = filepath.Join(hostpathtest.MountDir(t), "x")
	inner = filepath.Join(outer, "inner")
	t.Cleanup(func() {
		_ = unix.Unmount(inner, unix.MNT_DETACH)
		_ = unix.Unmount(outer, unix.MNT_DETACH)
	})
	return h, outer, inner
}
