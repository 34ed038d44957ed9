package main

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestCrashOwedExpansionControllerStep kills `volume claim` inside an owed expansion's
// controller step (expand34: a node-only expansion's debt, through a plugin back with the
// controller's EXPAND_VOLUME that expands only offline, gets its ControllerExpandVolume as the
// claim begins, before the attach): right after ControllerExpandVolume answered, before the
// step is recorded (rpc:ControllerExpandVolume), and once it is recorded, before the publish
// (expand:controller-done). The plugin's ControllerExpandVolume grows the volume by the delta
// each call (not idempotent, as the CSI spec says it must be), and lists volumes: `volctl
// reconcile` and the claim again must leave the storage grown once, to the 2MiB asked, its file
// system expanded (NodeExpandVolume at the publish), nothing owed, the claims published.
// Before, reconcile drove the first kill's claim on and left its expansion waiting for the
// claim's own release (the attach's intent recorded, so no ControllerExpandVolume could be sent),
// reconcile exiting 1, and once released, its step was sent again: the storage grew to 3MiB. The in-memory plugin
// bind-mounts what it publishes, so this needs mount privileges.
func TestCrashOwedExpansionControllerStep(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	cfg := csitest.DefaultMemConfig()
	cfg.Controller.ExpandVolume = false // node-only: the expansion is the NodeExpandVolume owed
	mem := csitest.NewMountingMemPlugin(t, cfg)
	socket, stop := csitest.Serve(t, csitest.WithServer(mem))
	env := &hostEnv{t: t, state: hostpathtest.MountDir(t), socket: socket}
	env.ok("plugin", "register", "--id", "hp", "--socket", socket)
	vols := []string{"rpc", "done"}
	for _, id := range vols {
		env.createVolume(id, spec.SingleNodeWriter)
		env.ok("volume", "expand", id, "--size", "2MiB") // on no path here: owed
	}
	// Back expanding only offline, through its controller: a new instance, fingerprinted anew.
	stop()
	mem.Reconfigure(func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume = true
		c.Plugin.VolumeExpansionOnline, c.Plugin.VolumeExpansionOffline = false, true
	})
	mem.ExpandByDelta(true)
	csitest.ServeAt(t, socket, csitest.WithServer(mem))

	status := func(id, jq string) string { return strings.TrimSpace(env.ok("volume", "status", id, "--jq", jq)) }
	ext := map[string]string{}
	for i, fp := range []string{"rpc:ControllerExpandVolume", "expand:controller-done"} {
		id := vols[i]
		ext[id] = status(id, ".external_id")
		env.crash(bin, fp, "volume", "claim", id, "--alloc", "a-"+id)
		if v, _ := mem.Volume(ext[id]); v.CapacityBytes != 2<<20 {
			t.Fatalf("killed at %s: the plugin's volume is %d bytes, want 2MiB (its controller's step done)", fp, v.CapacityBytes)
		}
	}
	// reconcile drives each claim on (it was taken, the attach's intent recorded: the volume
	// may be attached, so no ControllerExpandVolume may be sent), and its publish pays the debt.
	env.ok("reconcile")
	for i, id := range vols {
		var ctrl, node int
		for _, r := range csitest.Requests[csi.ControllerExpandVolumeRequest](mem) {
			if r.VolumeID == ext[id] {
				ctrl++
			}
		}
		for _, r := range csitest.Requests[csi.NodeExpandVolumeRequest](mem) {
			if r.VolumeID == ext[id] {
				node++
			}
		}
		v, _ := mem.Volume(ext[id])
		if got := status(id, "[.claims[0].state, .capacity_bytes, .node_expansion_owed // 0] | @csv"); v.CapacityBytes != 2<<20 || got != `"published",2097152,0` || ctrl != 1 || node != 1 {
			t.Errorf("killed at %s, after reconcile: storage %d bytes, claim state,recorded capacity,owed %s, ControllerExpandVolume sent %d times, NodeExpandVolume %d; "+
				"want 2MiB grown once, \"published\",2097152,0, once each", []string{"rpc:ControllerExpandVolume", "expand:controller-done"}[i], v.CapacityBytes, got, ctrl, node)
		}
		env.ok("volume", "release", id, "--alloc", "a-"+id)
	}
	env.checkInvariants()
}
