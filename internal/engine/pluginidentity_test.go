package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestAnotherDriverOnThePluginSocketGetsNoVolumeRPC: when a different driver comes up on a
// registered plugin's socket, no volume RPC goes to it. Before, DeleteVolume went to the
// impostor, whose NOT_FOUND counted as deleted: the record was dropped and the real storage
// left untracked.
func TestAnotherDriverOnThePluginSocketGetsNoVolumeRPC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a"))
	h.create(volume("b"))
	held := h.claim(ClaimRequest{VolumeID: "a", Alloc: "web"})
	stBefore, _ := h.staging("a")

	h.stopServe()
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "impostor.csi.example"
	cfg.NodeID = "node-1"
	impostor := csitest.NewMemPlugin(cfg)
	stopImpostor := csitest.ServeAt(t, h.socket, csitest.WithServer(impostor))

	const want = `now served by "impostor.csi.example", registered as "mem.csi.volctl.test"`
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with another driver on the socket: %v; want an error saying %s", what, err, want)
		}
	}

	check("delete", h.e.DeleteVolume(h.ctx, "b"))
	if v, err := h.e.Volume(h.ctx, "b"); err != nil || v.State != string(store.VolumeReady) {
		t.Errorf("volume b after the refused delete: %+v, %v", v, err)
	}

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "b", Alloc: "job"})
	check("claim", err)
	// Refused with nothing recorded, as a claim through a plugin whose Probe fails (claimProbe).
	if live := h.liveClaims("b"); len(live) != 0 {
		t.Errorf("claims on b after the claim through the impostor was refused: %+v, want none", live)
	}

	_, err = h.e.Release(h.ctx, "a", "web")
	check("release", err)
	live := h.liveClaims("a")
	if len(live) != 1 || live[0].TargetPath != held.TargetPath {
		t.Errorf("claim on a after the refused release = %+v", live)
	}
	if st, _ := h.staging("a"); st.Staged != stBefore.Staged || st.ControllerPublished != stBefore.ControllerPublished {
		t.Errorf("staging of a changed: %+v, was %+v", st, stBefore)
	}

	for _, rpc := range volumeRPCs(impostor) {
		t.Errorf("the impostor received %s", rpc)
	}

	infos, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if infos[0].Healthy || !strings.Contains(infos[0].LastError, want) {
		t.Errorf("plugin status with another driver on the socket: healthy=%v, error %q", infos[0].Healthy, infos[0].LastError)
	}
	if infos[0].Provider != "mem.csi.volctl.test" {
		t.Errorf("the impostor's name replaced the registered one: %q", infos[0].Provider)
	}

	// The registered driver back on its socket: everything goes through again.
	stopImpostor()
	h.serveAgain(t)
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with the registered driver back: %v", err)
	}
	if live := h.liveClaims("a"); len(live) != 0 {
		t.Errorf("a's release was not finished: %+v", live)
	}
	if err := h.e.DeleteVolume(h.ctx, "b"); err != nil {
		t.Errorf("delete of b, no claim recorded by the refused one: %v", err)
	}
}

// TestReregisteringAnotherDriverIsRefusedWhileVolumesUseIt: registering the plugin ID again
// while another driver serves its socket would repoint its volumes at storage that is not
// theirs.
func TestReregisteringAnotherDriverIsRefusedWhileVolumesUseIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a"))
	h.stopServe()
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "impostor.csi.example"
	csitest.ServeAt(t, h.socket, csitest.WithServer(csitest.NewMemPlugin(cfg)))

	_, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `registered as driver "mem.csi.volctl.test"`) {
		t.Fatalf("re-registering another driver under mem: %v", err)
	}
}
