package engine

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A plugin with LIST_VOLUMES_PUBLISHED_NODES answers ControllerUnpublishVolume OK (or NOT_FOUND)
// and still lists the volume published to the node: volctl must not record the volume detached
// (it would then hand it to Nomad, or attach it to another node, while the storage still has it
// attached here). The release fails saying so, the claim and the attachment stay recorded, and
// once the plugin detaches, reconcile finishes the release.
func TestControllerUnpublishAnsweredWhileStillPublishedKeepsTheAttachment(t *testing.T) {
	t.Parallel()
	unpublishStillPublishedKept(t, nil, "(ListVolumes' published_node_ids)")
}

// unpublishStillPublishedKept runs a plugin (newHarness's, mutated) that answers
// ControllerUnpublishVolume OK, then NOT_FOUND, and still reports the volume published to the
// node, by the RPC field names: the release fails naming field, keeps the claim and the
// attachment, reconcile keeps them while the plugin still reports it, and once it detaches,
// reconcile finishes the release.
func unpublishStillPublishedKept(t *testing.T, mutate func(*csitest.MemConfig), field string) {
	for _, tc := range []struct {
		name   string
		answer string
		lie    func(h *harness)
		honest func(h *harness)
	}{
		{name: "OK", answer: "answered ControllerUnpublishVolume OK",
			lie:    func(h *harness) { h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = true }) },
			honest: func(h *harness) { h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = false }) }},
		{name: "NOT_FOUND", answer: "answered ControllerUnpublishVolume NOT_FOUND",
			lie:    func(h *harness) { h.faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.NotFound) },
			honest: func(h *harness) { h.faults.Clear() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, mutate)
			h.create(volume("v", capab(spec.SingleNodeWriter)))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			ext := h.externalID("v")
			tc.lie(h)
			_, err := h.e.Release(h.ctx, "v", "a")
			if err == nil || !strings.Contains(err.Error(), tc.answer) || !strings.Contains(err.Error(), "still lists it published to node") ||
				!strings.Contains(err.Error(), field) {
				t.Fatalf("release through a plugin still reporting the attachment: %v; want an error saying it still lists it published, in %s", err, field)
			}
			if nodes := h.mem.PublishedNodes(ext); len(nodes) != 1 {
				t.Fatalf("plugin's attachments = %v, want the one it kept", nodes)
			}
			if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
				t.Fatalf("staging after the release = %+v (found %v): want the attachment still recorded", st, ok)
			}
			if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing {
				t.Fatalf("claims after the release = %+v: want the claim kept releasing for reconcile", live)
			}
			// Reconcile while the plugin still lists it: still kept.
			if rep, err := h.e.Reconcile(h.ctx); err == nil && len(rep.Problems) == 0 {
				t.Fatalf("reconcile while the plugin still lists the attachment reported nothing: %+v", rep)
			}
			if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
				t.Fatalf("staging after reconcile = %+v (found %v): want the attachment still recorded", st, ok)
			}
			tc.honest(h)
			if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
				t.Fatalf("reconcile once the plugin detaches: %+v, %v", rep, err)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("claims after reconcile: %+v", live)
			}
			if st, ok := h.staging("v"); ok {
				t.Errorf("staging row left after reconcile: %+v", st)
			}
			if nodes := h.mem.PublishedNodes(ext); len(nodes) != 0 {
				t.Errorf("still attached to %v after reconcile", nodes)
			}
		})
	}
}

// A forced detach is checked the same way: a plugin that answers OK and still lists the volume
// published keeps the attachment recorded, owed, so a handover to Nomad is refused rather than
// let Nomad attach the volume elsewhere while it is attached here.
func TestForceDetachThroughAPluginStillListingTheAttachmentKeepsItOwed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = true })
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("Detach(force): %v", err)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "still lists it published to node") {
		t.Errorf("warnings = %q, want one saying the plugin still lists the attachment", res.Warnings)
	}
	if info := h.volumeInfo("v"); !info.UnpublishOwed() {
		t.Fatalf("volume after the forced detach = %+v: want the attachment recorded, an unpublish owed", info)
	}
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.UnpublishLater = false })
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile once the plugin detaches: %+v, %v", rep, err)
	}
	if info := h.volumeInfo("v"); info.UnpublishOwed() || info.AttachedTo != "" {
		t.Errorf("volume after reconcile = %+v: want nothing owed", info)
	}
}

// The check asks only a plugin that can say (LIST_VOLUMES and LIST_VOLUMES_PUBLISHED_NODES),
// and a listing that fails leaves the plugin's OK as it is, with a warning: the release
// finishes.
func TestControllerUnpublishCheckedOnlyWhenItCanBe(t *testing.T) {
	// Serial: its sub-second Short timeout covers RPCs it does not test (the fingerprint's),
	// which tests running beside it on a loaded machine made it miss.
	unpublishCheckedWhenItCanBe(t, nil, csi.RPCListVolumes, []unpublishCheckCase{
		{name: "no LIST_VOLUMES_PUBLISHED_NODES", mutate: func(c *csitest.MemConfig) { c.Controller.ListVolumesPublishedNodes = false }},
		{name: "no LIST_VOLUMES", mutate: func(c *csitest.MemConfig) { c.Controller.ListVolumes = false }},
		{name: "listing fails", fault: func(f *csitest.Faults) { f.FailAlways(csi.RPCListVolumes, codes.Internal) }, sent: 1, warned: true},
		{name: "listing times out", fault: func(f *csitest.Faults) { f.Hang(csi.RPCListVolumes) }, sent: 1, warned: true},
		{name: "checked", sent: 1},
	})
}

// unpublishCheckCase is one plugin of unpublishCheckedWhenItCanBe: the harness's plugin mutated
// (after the test's base), a fault injected after the claim, how many times the check's RPC is
// sent by the release, and whether the release warns that it could not check.
type unpublishCheckCase struct {
	name   string
	mutate func(*csitest.MemConfig)
	fault  func(*csitest.Faults)
	sent   int
	warned bool
}

// unpublishCheckedWhenItCanBe claims and releases a volume through each case's plugin, base
// then its mutate applied, and checks how many times rpc (the detach's check) was sent, the
// warning, and that the release finished.
func unpublishCheckedWhenItCanBe(t *testing.T, base func(*csitest.MemConfig), rpc string, cases []unpublishCheckCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) {
				for _, m := range []func(*csitest.MemConfig){base, tc.mutate} {
					if m != nil {
						m(c)
					}
				}
			})
			var logs bytes.Buffer
			h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
				Timeouts: csi.Timeouts{Short: 200 * time.Millisecond, Long: 5 * time.Second}})
			h.create(volume("v", capab(spec.SingleNodeWriter)))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			if tc.fault != nil {
				tc.fault(h.faults)
			}
			h.faults.ResetCounts()
			h.release("v", "a")
			if n := h.faults.Calls(rpc); n != tc.sent {
				t.Errorf("%s sent %d time(s), want %d", rpc, n, tc.sent)
			}
			if warned := strings.Contains(logs.String(), "could not be checked"); warned != tc.warned {
				t.Errorf("warned %v, want %v; log: %q", warned, tc.warned, logs.String())
			}
			if st, ok := h.staging("v"); ok {
				t.Errorf("staging row left after the release: %+v", st)
			}
		})
	}
}

// A plugin with LIST_VOLUMES answers DeleteVolume NOT_FOUND for a volume it still lists (a
// lookup that failed, an ID it mangled): volctl must not forget the volume, leaving its storage
// and the user's data on it unaccounted for while saying it was deleted. The volume stays
// deleting, the error says what the plugin answered and how to finish; once the plugin deletes,
// the delete again forgets it.
func TestDeleteAnsweredNotFoundWhileStillListedKeepsTheVolumeDeleting(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID
	h.faults.FailAlways(csi.RPCDeleteVolume, codes.NotFound)
	err := h.e.DeleteVolume(h.ctx, "v")
	if err == nil || !strings.Contains(err.Error(), "answered DeleteVolume NOT_FOUND but still lists volume") || !strings.Contains(err.Error(), "stays marked deleting") {
		t.Fatalf("delete answered NOT_FOUND for a volume the plugin still lists: %v; want an error saying so, the volume kept deleting", err)
	}
	if v, verr := h.e.Volume(h.ctx, "v"); verr != nil || v.State != string(store.VolumeDeleting) || v.ExternalID != ext {
		t.Fatalf("volume v after the delete: %+v, %v; want it kept, deleting %q (the plugin still has it)", v, verr, ext)
	}
	if msgs := h.eventMessages("volume-delete", "v"); !strings.Contains(msgs, "still lists") || strings.Contains(msgs, `volume "v" deleted`) {
		t.Errorf("events say %q; want the delete not finished, not deleted", msgs)
	}
	h.faults.Clear()
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete once the plugin deletes: %v", err)
	}
	if _, ok := h.mem.Volume(ext); ok {
		t.Errorf("the plugin still has %q", ext)
	}
	// A NOT_FOUND the listing agrees with is the spec's "already deleted": no failure.
	ext = h.create(volume("w")).ExternalID
	h.mem.DropVolume(ext)
	if err := h.e.DeleteVolume(h.ctx, "w"); err != nil {
		t.Fatalf("delete of a volume the plugin no longer has: %v", err)
	}
	if n := h.faults.Calls(csi.RPCListVolumes); n == 0 || !slices.Contains(h.rpcs(), csi.RPCListVolumes) {
		t.Errorf("ListVolumes sent %d time(s): want the NOT_FOUND checked", n)
	}
}

// A plugin answers NodePublishVolume OK having bind-mounted at v's target a file or directory
// inside volume w's staging path, where w's file system is mounted: a block claim handed a
// file of w as its device, a file-system claim one of w's directories, or a block claim handed
// the device w's staging has mounted. ownDirectory compared the target with w's staging path
// itself only, and each was published: the alloc read and wrote w's data (the device one
// under w's mounted file system, which two writers corrupt). Each is refused naming w, and
// the claim rolled back. v's own storage on the same file system as w's (the test plugin keeps
// both under one directory) is published as before. Real mounts, as root.
func TestTargetBoundFromInsideAnotherVolumesStagingIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		block bool
		// from is what the plugin binds at v's target, given the state dir and w's staging
		// path ("" publishes v itself)
		from func(t *testing.T, dir, wStaging string) string
		want string
	}{
		{name: "block, own storage beside w's", block: true, from: func(*testing.T, string, string) string { return "" }},
		{name: "block, a file of w", block: true, want: `inside volume "w"'s staging path`,
			from: func(t *testing.T, _, w string) string { return makeIn(t, w, "data.img", false) }},
		{name: "file system, a directory of w", want: `inside volume "w"'s staging path`,
			from: func(t *testing.T, _, w string) string { return makeIn(t, w, "sub", true) }},
		{name: "block, the device w has mounted", block: true, want: `the device of volume "w"`,
			from: func(t *testing.T, _, w string) string { return deviceNodeOf(t, w) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var from func() string
			h := kernelHarness(t, func(c *csitest.MemConfig) { publishAVFrom(c, func() string { return from() }) })
			capability := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
			h.create(volume("w", capability))
			h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
			defer h.release("w", "b")
			wst, ok := h.staging("w")
			if !ok || wst.StagingPath == "" {
				t.Fatalf("w's staging = %+v (found %v), want it staged", wst, ok)
			}
			src := tc.from(t, h.dir, wst.StagingPath)
			from = func() string { return src }
			req := ClaimRequest{VolumeID: "v", Alloc: "a"}
			if tc.block {
				capability.AttachmentMode = spec.BlockDevice
				req.AttachmentMode = spec.BlockDevice
			}
			h.create(volume("v", capability))
			cl, err := h.e.Claim(h.ctx, req)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("claim of v through its own storage: %v", err)
				}
				h.release("v", "a")
				return
			}
			if err == nil {
				t.Fatalf("claim of v published at %s, a bind of %s inside w's staging, want it refused", cl.TargetPath, src)
			}
			h.wantRefused(err, tc.want)
		})
	}
}

// makeIn makes a file (or a directory) name in dir, and returns its path.
func makeIn(t *testing.T, dir, name string, isDir bool) string {
	t.Helper()
	p := filepath.Join(dir, name)
	var err error
	if isDir {
		err = os.Mkdir(p, 0o700)
	} else {
		err = os.WriteFile(p, []byte("w's data"), 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// deviceNodeOf makes a block device file of the device the file system mounted at path is on
// (what a plugin handing out that volume's device would bind), in a temp dir.
func deviceNodeOf(t *testing.T, path string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(t.TempDir(), "dev")
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(st.Dev)); err != nil {
		t.Skipf("cannot make a block device file: %v", err)
	}
	return node
}

// A plugin asked for an empty volume answers with one whose content_source is set to a type
// volctl does not know (a oneof member of a later spec, or the plugin's own): the volume says it
// was pre-populated, from something volctl cannot compare with what was asked, perhaps
// someone's data. It read as no source (every getter empty) and was recorded as the empty
// volume asked for. It is refused as a volume from another source is, and left alone.
func TestCreateAnsweredWithAContentSourceOfAnUnknownTypeIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	// volume (1) . content_source (4) . a oneof member CSI's protobuf here does not have (9)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Raw: csitest.AppendString("group-snap-1", 1, 4, 9), Times: 1})
	_, err := h.e.CreateVolume(h.ctx, volume("fresh"))
	ext := ""
	if vols := h.mem.Volumes(); len(vols) == 1 {
		ext = vols[0].ID
	}
	h.refusedCreate(err, "fresh", ext, "pre-populated from a content source of a type volctl does not know", "an empty volume was asked")
}
