package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// bindOnlyMounter is the kernel's mounter in a plugin process that ends between the two
// mount(2) calls of SystemMounter.BindMount: the bind is made, the remount that applies the
// request's flags (MS_RDONLY) never runs. That is what a SIGKILL, the OOM killer, a panic in
// another handler (crashRPC exits 70 at once) or Serve's Stop after its 5 s grace (gRPC's Stop
// does not wait for handlers, and main returns) leaves, the record already saved
// (recordThenMount saves before it mounts).
type bindOnlyMounter struct{ hostpath.SystemMounter }

func (bindOnlyMounter) BindMount(source, target, _ string, _ uintptr) error {
	return unix.Mount(source, target, "", unix.MS_BIND, "")
}

// TestPublishRetriedAfterACrashBetweenBindAndRemountIsReadOnly: the design says the state is
// written before each mount, so that a crash leaves a record the retried RPC completes. A
// read-only NodePublishVolume whose process died after the bind and before the remount left a
// read-write bind at the target and a record saying readonly=true. The CO, which never had an
// answer, sends the same request again to the plugin started again: it found the target
// mounted, recorded with the same options, showing the volume's directory, and answered OK,
// leaving the consumer that asked for read-only a writable mount of the volume. It completes
// the remount now (ApplyFlags). Found by helper review71.
func TestPublishRetriedAfterACrashBetweenBindAndRemountIsReadOnly(t *testing.T) {
	hostpathtest.RequireMount(t)
	root := filepath.Join(hostpathtest.MountDir(t), "root")

	// The first process: the publish is recorded, bound, and the process ends before the remount.
	first := start(t, hostpath.Config{Root: root, NodeID: "n1", Mounter: bindOnlyMounter{}})
	v, p := first.staged(t, "ro")
	mustOK(t, first.publish(v, p, p.target, true, nil))
	mustOK(t, first.srv.Stop())

	// Started again on the root; the CO sends the publish it never had an answer to.
	again := start(t, hostpath.Config{Root: root, NodeID: "n1"})
	mustOK(t, again.publish(v, p, p.target, true, nil))
	var st unix.Statfs_t
	mustOK(t, unix.Statfs(p.target, &st))
	werr := os.WriteFile(filepath.Join(p.target, "written-through-a-read-only-claim"), []byte("x"), 0o644)
	if st.Flags&unix.ST_RDONLY == 0 || werr == nil {
		t.Errorf("NodePublishVolume readonly=true sent again after a crash between the bind and the remount answered OK, "+
			"but the target %s is mounted read-write (statfs flags %#x; a write through it: %v)", p.target, st.Flags, werr)
	}
}

// TestDeleteAfterARestartWithoutEnableAttachAdvisesAStepThatWorks: a plugin served with
// --enable-attach records each ControllerPublishVolume's attachment. Started again on the root
// without --enable-attach (the flag dropped from its exec block's args, or from the Nomad job),
// a volume whose attachment was recorded before could never be deleted: DeleteVolume was
// refused FAILED_PRECONDITION "published to node ... (ControllerUnpublishVolume first)", and the
// ControllerUnpublishVolume it advised answers UNIMPLEMENTED ("needs --enable-attach"); a CO told
// the plugin has no PUBLISH_UNPUBLISH_VOLUME does not send it at all. The refusal names the way
// out now: serve with --enable-attach again to unpublish it. Found by helper review71.
func TestDeleteAfterARestartWithoutEnableAttachAdvisesAStepThatWorks(t *testing.T) {
	root := filepath.Join(hostpathtest.ShortDir(t), "root")
	first, _ := startFake(t, hostpath.Config{Root: root, NodeID: "n1", EnableAttach: true})
	v := first.createVolume(t, "attached")
	_, err := first.ctl.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
		VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw,
	})
	mustOK(t, err)
	mustOK(t, first.srv.Stop())

	again, _ := startFake(t, hostpath.Config{Root: root, NodeID: "n1"})
	_, derr := again.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	if derr == nil {
		t.Fatal("DeleteVolume of a volume recorded attached, after a restart without --enable-attach, answered OK: the attachment it had refused for is dropped unsaid")
	}
	_, uerr := again.ctl.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{
		VolumeId: v.GetVolumeId(), NodeId: "n1",
	})
	if status.Code(uerr) == codes.Unimplemented && !strings.Contains(status.Convert(derr).Message(), "--enable-attach") {
		t.Errorf("DeleteVolume after a restart without --enable-attach: %v (%s)\nand the ControllerUnpublishVolume it advises: %v\n"+
			"the volume can never be deleted, and the refusal names a step the plugin does not offer", status.Code(derr), status.Convert(derr).Message(), uerr)
	}
}

// TestStageRetriedAfterACrashBetweenBindAndRemountHasTheCapabilitysFlags: the same crash in a
// NodeStageVolume whose capability's mount flags ask for noexec: the stage sent again found the
// staging mounted and recorded, and answered OK with the staging executable.
func TestStageRetriedAfterACrashBetweenBindAndRemountHasTheCapabilitysFlags(t *testing.T) {
	hostpathtest.RequireMount(t)
	root := filepath.Join(hostpathtest.MountDir(t), "root")
	noexec := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: []string{"noexec"}}},
		AccessMode: snw.GetAccessMode(),
	}
	stage := func(c *client, v *csi.Volume, p paths) error {
		_, err := c.nd.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
			VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, VolumeCapability: noexec,
		})
		return err
	}
	first := start(t, hostpath.Config{Root: root, NodeID: "n1", Mounter: bindOnlyMounter{}})
	v := first.createVolume(t, "noexec")
	p := newPaths(t)
	mustOK(t, stage(first, v, p))
	mustOK(t, first.srv.Stop())

	again := start(t, hostpath.Config{Root: root, NodeID: "n1"})
	mustOK(t, stage(again, v, p))
	var st unix.Statfs_t
	mustOK(t, unix.Statfs(p.staging, &st))
	if st.Flags&unix.ST_NOEXEC == 0 {
		t.Errorf("NodeStageVolume with mount flag noexec sent again after a crash between the bind and the remount answered OK, "+
			"but the staging %s is mounted without noexec (statfs flags %#x)", p.staging, st.Flags)
	}
}
