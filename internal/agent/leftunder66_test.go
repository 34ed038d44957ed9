package agent

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A plugin that crashed under mounts leaving a helper outside its process group (a FUSE daemon
// in a session of its own, carrying the plugin's instance) has that helper kept while the
// mounts last and "stopped with the plugin once it has none" (docs/agent.md, the stop's step 2:
// "so is what an earlier process of the plugin left when it exited under mounts, once they are
// gone"). The crashed instance is remembered in the runner's memory alone (runner.leftUnder):
// an agent stopped (or restarted by systemd, or upgraded) while the mounts last leaves the
// plugin running, and the next agent adopts the plugin through its pid file but knows nothing
// of the helper. Once the mounts are gone, its clean stop stops the plugin and leaves the
// helper running for good, no agent and no record knowing of it.
// Found by helper review66.
func TestHelperACrashedInstanceLeftIsStoppedByTheNextAgent(t *testing.T) {
	f := newFixture(t)
	stop1, helper, cmd := crashUnderMounts(t, f)
	waitFor(t, "the restarted plugin to be healthy", func() bool { return f.plugin("fuse").Healthy })
	pid := f.pid("fuse")
	if err := stop1(); err != nil { // under the claim's mount: the plugin is left running
		t.Fatal(err)
	}
	if !alive(pid) || !alive(helper) {
		t.Fatalf("after the first agent's stop under mounts: plugin %d alive %v, helper %d alive %v; want both running",
			pid, alive(pid), helper, alive(helper))
	}

	stop2 := f.startAgent(testSettings) // the next agent adopts the plugin
	waitFor(t, "the next agent to adopt the plugin", func() bool {
		return strings.Contains(f.logs.String(), "adopted the running plugin") && f.plugin("fuse").Healthy
	})
	mountsGoneThenStop(t, f, cmd, stop2)
	if alive(helper) {
		t.Errorf("the helper (pid %d) a crashed process of the plugin left outside its group under mounts still runs after the next agent's clean stop without mounts: "+
			"no agent knows of it any more (agent log mentions stopping it: %v)", helper, strings.Contains(f.logs.String(), "stopped what the plugin left"))
	}
}

// The same within one agent: "a runner that adopts the process after a re-declaration (its
// timeout changed) inherits them" (docs/architecture.md), but a re-declaration that changes the
// exec block (a credential in its env rotated by plugin register while the plugin holds mounts,
// the case docs/agent.md describes) drops the old runner's leftUnder: the new runner adopts the
// process, restarts it with the new env once the mounts are gone, and the clean stop after,
// and never stops the helper the crashed process left.
// Found by helper review66.
func TestHelperACrashedInstanceLeftIsStoppedAfterAnExecChangeUnderMounts(t *testing.T) {
	f := newFixture(t)
	stop, helper, cmd := crashUnderMounts(t, f)
	waitFor(t, "the restarted plugin to be healthy", func() bool { return f.plugin("fuse").Healthy })
	f.register(withEnv(f.execPlugin("fuse", "mounts-with-helper"), "TOKEN", "rotated"))
	waitFor(t, "the new declaration's runner to withhold the restart under the mounts", func() bool {
		return strings.Contains(f.logs.String(), "not restarting it with the declared one")
	})
	if !alive(helper) {
		t.Fatalf("the helper (pid %d) was stopped under mounts", helper)
	}
	mountsGoneThenStop(t, f, cmd, stop)
	if alive(helper) {
		t.Errorf("the helper (pid %d) a crashed process of the plugin left outside its group under mounts still runs after the agent's clean stop without mounts, "+
			"the plugin re-declared with another env meanwhile (agent log mentions stopping it: %v)", helper, strings.Contains(f.logs.String(), "stopped what the plugin left"))
	}
}

// The record of what crashed processes left is read as a pid file is: a named pipe or a huge
// file at its path (planted, or a damaged file system) neither hangs a runner's start nor is
// read whole; a record as the agent writes it is read back, what is no instance token left out.
func TestLeftUnderRecordIsReadAsAPidFileIs(t *testing.T) {
	dir := t.TempDir()
	path := leftUnderPath(dir, "p")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { done <- readLeftUnder(dir, "p") }()
	select {
	case got := <-done:
		if got != nil {
			t.Errorf("a FIFO at %s read as %q", path, got)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("reading the record hangs on a FIFO at %s", path)
	}
	os.Remove(path)
	tok := newInstance()
	if err := os.WriteFile(path, []byte(tok+"\nnot-a-token\n"+tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := readLeftUnder(dir, "p"); len(got) != 1 || got[0] != tok {
		t.Errorf("record of %s read as %q, want [%s]", tok, got, tok)
	}
}
