package agent

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestOutdatedProcessIsNotStoppedUnderItsOldSocketMatesMounts (found by helper review65):
// the pid file now records the sockets a plugin's process serves (process.served), and
// runner.mountsHeld holds their publish locks, but the count it stops the process on is still
// PluginMounts of the plugin as stored (its NEW socket's IDs). Plugin hp's process serves S1,
// where plugin hp2 (no exec block, one process per socket) is registered too and holds a mounted
// claim; hp is registered again on S2 (it holds no mounts of its own). The next agent adopts the
// process, finds it outdated and stops it, counting no mounts, under hp2's mounted volume: the
// agent "never stops a plugin that may hold a mount".
func TestOutdatedProcessIsNotStoppedUnderItsOldSocketMatesMounts(t *testing.T) {
	hostpathtest.RequireMount(t)
	f := newFixture(t)
	sp, pid := f.leftRunningUnderAClaim() // hp on S1, started by the agent, a claim on it
	// Released while no agent runs: the process, left running, holds no mounts of hp.
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	moved := sp
	moved.Socket = filepath.Join(f.dir, "sockets", "hp-new.sock")
	if _, err := f.e.RegisterPlugin(f.ctx, moved); err != nil {
		t.Fatalf("registering hp on another socket with no mounts: %v", err)
	}
	// hp2 registered on S1, which hp's process still serves, and a volume of it claimed
	// through that process.
	f.register(spec.Plugin{ID: "hp2", Type: spec.PluginMonolith, Socket: sp.Socket})
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "logs", Name: "logs", PluginID: "hp2", Capabilities: caps, CapacityMin: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Claim(f.ctx, engine.ClaimRequest{VolumeID: "logs", Alloc: "web-1"}); err != nil {
		t.Fatal(err)
	}
	if m, err := f.e.PluginMounts(f.ctx, "hp2"); err != nil || m.Mounts == 0 {
		t.Fatalf("hp2's mounts: %+v, %v; want its claim mounted", m, err)
	}
	stop := f.startAgent(testSettings)
	defer stop()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			info, _ := f.e.ClaimInfo(f.ctx, "logs", "web-1")
			t.Fatalf("the agent stopped the outdated process of hp (pid %d), which serves socket %s, under hp2's mounted claim (claim state %q) on that socket: counted hp's mounts on its new socket alone",
				pid, sp.Socket, info.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
