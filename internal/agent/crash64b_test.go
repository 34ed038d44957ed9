package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A plugin whose process forked its server into its own process group (no setsid: "forker")
// and then crashed under mounts has that child kept (runner.go, the exited case). The child
// still serves the plugin's socket: before, followDaemon declined it ("in the plugin's group:
// stopped with it"), and the restart that followed found the socket live and took the agent's
// own plugin for one "no volctl agent started": probed only, never stopped or restarted, its
// kept processes never stopped once the mounts were gone. It is followed as the plugin now.
// Found by helper review64 (own2), in this round's change.
func TestCrashedPluginsKeptGroupChildIsFollowedAsThePlugin(t *testing.T) {
	f := newFixture(t)
	f.mountsForReal()
	stop := f.startForker("forker")
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("fk").Healthy })
	leader, child := f.pid("fk"), f.childPid("fk")
	f.claimDB("fk")
	// The plugin's process crashes; its child, in its group, keeps serving the socket and the mount.
	if err := syscall.Kill(leader, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the child to be supervised as the plugin", func() bool { return f.pid("fk") == child })
	time.Sleep(time.Second) // a restart, had one been made, finds the socket live
	if strings.Contains(f.logs.String(), "no volctl agent started it") {
		t.Errorf("after its process crashed under mounts, the agent took its own plugin's child (pid %d, kept in the plugin's group, carrying its instance) for a plugin no volctl agent started:\n%s",
			child, f.logs)
	}
	// Once the mounts are gone the agent's stop stops it, as the plugin it supervises.
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	f.waitNoClaims("the claim released")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(child) {
		t.Errorf("the crashed plugin's child (pid %d), supervised as the plugin, still runs after the agent stopped with no mounts left", child)
	}
}

// The same crash with the helper kept in the plugin's group and serving no socket
// ("mounts-with-group-helper"): the exit path logs it as kept in the group; before, looking
// for what the plugin left outside its group (leftBy finds every process carrying the
// instance, whatever its group), it logged the same pid again as left "outside its process
// group". Found by helper review64 (own2), in this round's change.
func TestGroupHelperKeptUnderMountsIsNotSaidToBeOutsideTheGroup(t *testing.T) {
	f, stop, helper := groupHelperPlugin(t)
	defer stop()
	f.claimDB("fuse")
	if err := os.WriteFile(filepath.Join(f.dir, "hostpath-fuse", "crash"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the crash to be seen", func() bool { return len(f.events("plugin-exit")) > 0 })
	if !alive(helper) {
		t.Fatalf("helper %d stopped under mounts", helper)
	}
	for _, line := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(line, "outside its process group; not stopping them") && strings.Contains(line, strconv.Itoa(helper)) {
			t.Errorf("the helper the crashed plugin left in its own process group (pid %d) is logged as left outside its process group:\n%s", helper, line)
		}
	}
}
