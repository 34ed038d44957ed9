package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

func registered(id, external string) spec.Volume {
	sv := volume(id)
	sv.ExternalID = external
	sv.CapacityMin = 0
	sv.Context = map[string]string{"endpoint": "10.0.0.1"}
	return sv
}

func TestRegisterVolumeValidatesAndUpdatesByNomadsRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})

	// The plugin must confirm the capabilities: an unknown external ID is refused.
	if _, err := h.e.RegisterVolume(h.ctx, registered("v", "no-such")); err == nil || !strings.Contains(err.Error(), "ValidateVolumeCapabilities: NotFound") {
		t.Fatalf("register of an unknown external volume: %v", err)
	}
	v, err := h.e.RegisterVolume(h.ctx, registered("v", "ext-1"))
	if err != nil {
		t.Fatal(err)
	}
	if v.ExternalID != "ext-1" || v.State != "ready" || v.Context["endpoint"] != "10.0.0.1" || v.Namespace != "default" {
		t.Fatalf("registered = %+v", v)
	}
	if n := h.mem.CallCount(csi.RPCValidateVolumeCapabilities); n != 2 {
		t.Errorf("ValidateVolumeCapabilities called %d times", n)
	}

	for _, tt := range []struct {
		field  string
		change func(*spec.Volume)
	}{
		{"name", func(s *spec.Volume) { s.Name = "other" }},
		{"external_id", func(s *spec.Volume) { s.ExternalID = "ext-2" }},
		{"parameters", func(s *spec.Volume) { s.Parameters = map[string]string{"tier": "slow"} }},
		{"topology_request", func(s *spec.Volume) {
			s.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
		}},
	} {
		sv := registered("v", "ext-1")
		tt.change(&sv)
		if sv.ExternalID == "ext-2" {
			h.mem.AddVolume(csi.Volume{ID: "ext-2"})
		}
		_, err := h.e.RegisterVolume(h.ctx, sv)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), tt.field+" cannot be changed") {
			t.Errorf("changing %s: %v", tt.field, err)
		}
	}

	// Capacity only grows; an empty context keeps the stored one; capabilities may change.
	sv := registered("v", "ext-1")
	sv.CapacityMin = 2 << 30
	sv.Context = nil
	sv.Capabilities = append(sv.Capabilities, capab(spec.SingleNodeReaderOnly))
	v, err = h.e.RegisterVolume(h.ctx, sv)
	if err != nil {
		t.Fatal(err)
	}
	if v.Context["endpoint"] != "10.0.0.1" || v.RequestedMin != 2<<30 || len(v.Capabilities) != 2 {
		t.Fatalf("after re-register = %+v", v)
	}
	sv.CapacityMin = 1 << 30
	if _, err := h.e.RegisterVolume(h.ctx, sv); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "cannot shrink") {
		t.Fatalf("shrinking capacity_min: %v", err)
	}
}

func TestRegisterNeedsARegisteredReachablePlugin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := registered("v", "ext-1")
	sv.PluginID = "ghost"
	if _, err := h.e.RegisterVolume(h.ctx, sv); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `plugin "ghost" is not registered`) {
		t.Fatalf("unregistered plugin: %v", err)
	}
	// A plugin whose socket is gone.
	h.e.Close()
	h.e = nil
	h.open(Config{})
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "gone", Type: spec.PluginMonolith, Socket: "/nonexistent/x.sock"}); err == nil ||
		!strings.Contains(err.Error(), "/nonexistent/x.sock does not exist") {
		t.Fatalf("plugin with a missing socket: %v", err)
	}
}

func TestCreateVolume(t *testing.T) {
	t.Parallel()
	// It takes topology: a create with a topology_request is refused one that does not.
	h := newHarness(t, func(c *csitest.MemConfig) { c.Plugin.VolumeAccessibilityConstraints = true })
	sv := volume("db")
	sv.Namespace = "prod"
	sv.TopologyRequest = &spec.TopologyRequest{Preferred: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
	v := h.create(sv)
	req, _ := csitest.LastRequest[csi.CreateVolumeRequest](h.mem)
	// A name of this create's own (createName), of csiName's form and length.
	if len(req.Name) != len(csiName("prod", "db")) || req.Name == csiName("prod", "db") || !strings.HasPrefix(req.Name, "volctl-db-") {
		t.Errorf("CSI name %q", req.Name)
	}
	if req.CapacityMin != 1<<20 || req.Secrets["token"] != "s3cr3t" || req.Parameters["tier"] != "fast" ||
		req.TopologyRequest == nil || len(req.TopologyRequest.Preferred) != 1 {
		t.Errorf("CreateVolume request = %+v", req)
	}
	if v.CapacityBytes < 1<<20 || v.CSIName != req.Name {
		t.Errorf("created = %+v", v)
	}
	// Creating it again with the same spec changes nothing and sends no RPC.
	h.mem.ResetCalls()
	again := h.create(sv)
	if again.ExternalID != v.ExternalID || h.mem.CallCount(csi.RPCCreateVolume) != 0 {
		t.Fatalf("second create sent CreateVolume or changed the volume: %+v", again)
	}
	// ... but not with a changed immutable field.
	sv.Parameters = map[string]string{"tier": "slow"}
	if _, err := h.e.CreateVolume(h.ctx, sv); !errors.Is(err, ErrConflict) {
		t.Fatalf("create with changed parameters: %v", err)
	}
}

func TestCSINameIsDeterministicAndSafe(t *testing.T) {
	t.Parallel()
	a, b := csiName("default", "ebs-vol[0]"), csiName("default", "ebs-vol[1]")
	if a == b || a != csiName("default", "ebs-vol[0]") || a == csiName("other", "ebs-vol[0]") {
		t.Fatalf("names not distinct/deterministic: %q %q", a, b)
	}
	long := csiName("default", strings.Repeat("Ab_", 60))
	if len(long) > 63 {
		t.Errorf("name %q longer than 63", long)
	}
	for _, n := range []string{a, b, long} {
		for _, r := range n {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				t.Errorf("name %q has %q", n, r)
			}
		}
	}
}

// TestCreateIsHealedByReplayNotDuplicated: a CreateVolume whose answer is lost (the plugin
// created the volume, volctl never recorded it) leaves the intent; the next create of the same
// spec, or reconcile, replays CreateVolume with the same name and the plugin returns the same
// volume: one volume, not two.
func TestCreateIsHealedByReplayNotDuplicated(t *testing.T) {
	t.Parallel()
	for _, heal := range []string{"create-again", "reconcile"} {
		t.Run(heal, func(t *testing.T) {
			h := newHarness(t, nil)
			// DeadlineExceeded after the plugin did the work: the lost-answer case.
			h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.DeadlineExceeded, Times: fastRetry.Attempts})
			if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil || !strings.Contains(err.Error(), "reconcile") {
				t.Fatalf("create with lost answers: %v", err)
			}
			info, err := h.e.Volume(h.ctx, "v")
			if err != nil || info.State != string(store.VolumeCreating) || info.CSIName == "" {
				t.Fatalf("intent not kept: %+v %v", info, err)
			}
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); !errors.Is(err, ErrConflict) {
				t.Fatalf("claim of a volume still creating: %v", err)
			}
			// The plugin did create the volume; only its answer was lost.
			made := h.pluginCreate(csi.CreateVolumeRequest{Name: info.CSIName, CapacityMin: 1 << 20,
				Capabilities: volumeCapabilities(volume("v")), Parameters: map[string]string{"tier": "fast"}})
			if heal == "reconcile" {
				if _, err := h.e.Reconcile(h.ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				h.create(volume("v"))
			}
			info, _ = h.e.Volume(h.ctx, "v")
			if info.State != "ready" || info.ExternalID != made.ID {
				t.Fatalf("after %s: %+v, want the volume the plugin made (%q)", heal, info, made.ID)
			}
			names := map[string]bool{}
			for _, r := range csitest.Requests[csi.CreateVolumeRequest](h.mem) {
				names[r.Name] = true
			}
			if len(names) != 1 {
				t.Fatalf("CreateVolume sent with %d different names: %v", len(names), names)
			}
			if n := h.pluginVolumeCount(); n != 1 {
				t.Fatalf("plugin has %d volumes, want 1", n)
			}
		})
	}
}

func TestCreateFinalErrorForgetsTheIntent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.faults.FailOnce(csi.RPCCreateVolume, codes.InvalidArgument)
	if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
		t.Fatal("create succeeded")
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("intent kept after a final error: %v", err)
	}
}

// A final error after an earlier CreateVolume whose answer was lost says nothing about what that
// earlier call created: the intent (and the CSI name that finds the volume) must be kept, not
// forgotten with the plugin's volume leaked. Two ways to get there: a retry within one create,
// and a replay by reconcile of a create interrupted earlier.
func TestCreateFinalErrorAfterALostAnswerKeepsTheIntent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		run  func(h *harness) error
	}{
		{"retry within one create", func(h *harness) error {
			h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.DeadlineExceeded, Times: 1})
			h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.Internal, Times: 1})
			_, err := h.e.CreateVolume(h.ctx, volume("v"))
			return err
		}},
		{"replay by reconcile", func(h *harness) error {
			h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.DeadlineExceeded, Times: fastRetry.Attempts})
			if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
				h.t.Fatal("create with every answer lost succeeded")
			}
			// One of the lost answers was about a volume the plugin made, under the CSI name.
			info := h.volumeInfo("v")
			h.pluginCreate(csi.CreateVolumeRequest{Name: info.CSIName, CapacityMin: 1 << 20,
				Capabilities: volumeCapabilities(volume("v")), Parameters: map[string]string{"tier": "fast"}})
			h.faults.FailOnce(csi.RPCCreateVolume, codes.Internal)
			_, err := h.e.Reconcile(h.ctx)
			return err
		}},
		{"replay by the same create", func(h *harness) error {
			h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Code: codes.DeadlineExceeded, Times: fastRetry.Attempts})
			if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
				h.t.Fatal("create with every answer lost succeeded")
			}
			h.faults.FailOnce(csi.RPCCreateVolume, codes.Internal)
			_, err := h.e.CreateVolume(h.ctx, volume("v"))
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if err := tt.run(h); err == nil {
				t.Fatal("the create whose last CreateVolume failed succeeded")
			}
			info, err := h.e.Volume(h.ctx, "v")
			if err != nil || info.State != string(store.VolumeCreating) {
				t.Fatalf("volume after the final error = %+v, %v; want it kept, creating", info, err)
			}
			h.faults.Clear()
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile with the plugin well: %v %+v", err, rep)
			}
			if info, err := h.e.Volume(h.ctx, "v"); err != nil || info.State != string(store.VolumeReady) {
				t.Fatalf("volume after reconcile = %+v, %v; want ready", info, err)
			}
			if n := h.pluginVolumeCount(); n != 1 {
				t.Fatalf("plugin has %d volumes, want the one", n)
			}
		})
	}
}

func TestCreateNeedsCapabilities(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		mutate func(*csitest.MemConfig)
		spec   func(*spec.Volume)
		want   string
	}{
		{"create", func(c *csitest.MemConfig) { c.Controller.CreateDeleteVolume = false }, nil, "CREATE_DELETE_VOLUME"},
		{"clone", func(c *csitest.MemConfig) { c.Controller.CloneVolume = false }, func(s *spec.Volume) { s.CloneID = "x" }, "CLONE_VOLUME"},
		{"snapshot", func(c *csitest.MemConfig) { c.Controller.CreateDeleteSnapshot = false }, func(s *spec.Volume) { s.SnapshotID = "x" }, "CREATE_DELETE_SNAPSHOT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.mutate)
			sv := volume("v")
			if tt.spec != nil {
				tt.spec(&sv)
			}
			_, err := h.e.CreateVolume(h.ctx, sv)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %s", err, tt.want)
			}
			if h.mem.CallCount(csi.RPCCreateVolume) != 0 {
				t.Fatal("CreateVolume sent anyway")
			}
		})
	}
}

func TestCloneOfARegisteredVolumeUsesItsExternalID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	src := h.create(volume("src"))
	sv := volume("copy")
	sv.CloneID = "src"
	h.create(sv)
	req, _ := csitest.LastRequest[csi.CreateVolumeRequest](h.mem)
	if req.CloneID != src.ExternalID {
		t.Fatalf("clone source sent = %q, want the source's external ID %q", req.CloneID, src.ExternalID)
	}
}

func TestDeleteAndDeregister(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	v := h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	for name, op := range map[string]func() error{
		"delete":     func() error { return h.e.DeleteVolume(h.ctx, "v") },
		"deregister": func() error { _, err := h.e.DeregisterVolume(h.ctx, "v", false); return err },
	} {
		err := op()
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "web-0"`) {
			t.Fatalf("%s of a claimed volume: %v", name, err)
		}
	}
	if h.mem.CallCount(csi.RPCDeleteVolume) != 0 {
		t.Fatal("DeleteVolume sent for a claimed volume")
	}
	h.release("v", "web-0")
	// NOT_FOUND from the plugin counts as deleted (the plugin lost the volume: its listing
	// agrees; TestDeleteAnsweredNotFoundWhileStillListedKeepsTheVolumeDeleting when it does not).
	h.mem.DropVolume(v.ExternalID)
	h.faults.FailOnce(csi.RPCDeleteVolume, codes.NotFound)
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("record kept: %v", err)
	}
	if err := h.e.DeleteVolume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}

	// Deregister --force releases the claims first; the storage is untouched.
	h.create(volume("w"))
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"})
	if _, err := h.e.DeregisterVolume(h.ctx, "w", true); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Volume(h.ctx, "w"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("not deregistered: %v", err)
	}
	if n := h.mem.CallCount(csi.RPCNodeUnpublishVolume); n != 2 {
		t.Errorf("forced deregister did not release the claim (NodeUnpublishVolume calls %d)", n)
	}
	_ = v
}

func TestDeleteFailureIsFinishedByReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCDeleteVolume, codes.Unavailable)
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		t.Fatal("delete succeeded against a failing plugin")
	}
	info, _ := h.e.Volume(h.ctx, "v")
	if info.State != "deleting" {
		t.Fatalf("state = %q, want deleting", info.State)
	}
	h.faults.Clear()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != "deleted" {
		t.Fatalf("reconcile = %+v, %v", rep, err)
	}
}

func TestVolumePrefixes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, id := range []string{"db-1", "db-2", "web"} {
		h.create(volume(id))
	}
	if v, err := h.e.Volume(h.ctx, "we"); err != nil || v.ID != "web" {
		t.Fatalf("unique prefix: %+v %v", v, err)
	}
	_, err := h.e.Volume(h.ctx, "db")
	var amb *AmbiguousError
	if !errors.As(err, &amb) || len(amb.Matches) != 2 || !errors.Is(err, ErrInvalid) {
		t.Fatalf("ambiguous prefix: %v", err)
	}
	if _, err := h.e.Volume(h.ctx, "zzz"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no match: %v", err)
	}
	list, err := h.e.Volumes(h.ctx)
	if err != nil || len(list) != 3 || !list[0].Schedulable {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

func TestDeregisterPlugin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	if err := h.e.DeregisterPlugin(h.ctx, "mem", false); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"v"`) {
		t.Fatalf("deregister of a used plugin: %v", err)
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatal(err)
	}
	info, err := h.e.Volume(h.ctx, "v")
	if err != nil || info.Schedulable || !strings.Contains(info.PluginError, "not registered") {
		t.Fatalf("volume of a deregistered plugin: %+v %v", info, err)
	}
}

func TestDescribeMapChangeNamesEachKeyThatDiffers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		was, now map[string]string
		want     string
	}{
		{map[string]string{"kind": "x"}, map[string]string{"kind": "y"}, `kind is "x", the spec says "y"`},
		{map[string]string{"a": "1", "b": "2"}, map[string]string{"b": "2", "c": "3"},
			`a is "1", the spec says not set; c is not set, the spec says "3"`},
		{nil, map[string]string{"zone": "a"}, `zone is not set, the spec says "a"`},
	} {
		if got := describeMapChange(tt.was, tt.now); got != tt.want {
			t.Errorf("describeMapChange(%v, %v) = %q, want %q", tt.was, tt.now, got, tt.want)
		}
	}
}

// A delete the plugin refuses for the volume's own state (FAILED_PRECONDITION: it has
// snapshots, say) leaves the volume ready and claimable, not stuck deleting.
func TestDeleteRefusedByThePluginKeepsTheVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailOnce(csi.RPCDeleteVolume, codes.FailedPrecondition)
	err := h.e.DeleteVolume(h.ctx, "v")
	if err == nil || !strings.Contains(err.Error(), "kept") {
		t.Fatalf("delete = %v, want the refusal, saying the volume is kept", err)
	}
	if info, err := h.e.Volume(h.ctx, "v"); err != nil || info.State != string(store.VolumeReady) {
		t.Fatalf("volume after the refused delete = %+v, %v; want ready", info, err)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.release("v", "a")
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete once the plugin allows it: %v", err)
	}
}
