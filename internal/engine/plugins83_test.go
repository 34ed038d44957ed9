package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestRegisterAgainOfAPluginThatLostStageUnstageIsNotUnchanged: volume v is claimed (staged
// and published) through plugin mem, which then restarts without STAGE_UNSTAGE_VOLUME. The
// operator registers mem again with the declaration it has. The registration finds the loss
// (its plugin-capabilities event names STAGE_UNSTAGE_VOLUME and v, which can no longer be
// unstaged through it), yet its outcome is Unchanged with nothing changed: `volctl plugin
// register` prints `Plugin "mem" unchanged: registered with this declaration; ..., healthy`,
// exit 0, and the plugin-register event says "registered again, unchanged". It names another
// driver version as a change (pluginChanges), but not a lost capability that strands a staged
// volume. Correct: a registration that finds other capabilities than recorded is not
// Unchanged; it names the capabilities among what changed (so the command's line says so).
// Found by helper review83 (plugins).
func TestRegisterAgainOfAPluginThatLostStageUnstageIsNotUnchanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if st, _ := h.staging("v"); !st.Staged {
		t.Fatalf("precondition: v is not staged after its claim: %+v", st)
	}
	h.restartWith(func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false })

	_, reg, err := h.e.RegisterPluginOutcome(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket})
	if err != nil {
		t.Fatalf("register mem again: %v", err)
	}
	caps := h.eventsOf("plugin-capabilities", "", "STAGE_UNSTAGE_VOLUME")
	if len(caps) == 0 {
		t.Fatalf("precondition: no plugin-capabilities event naming the lost STAGE_UNSTAGE_VOLUME after the registration")
	}
	regs := h.eventsOf("plugin-register", "", "")
	if reg.Outcome != Updated || !slices.Contains(reg.Changed, "capabilities") || len(regs) > 0 && strings.Contains(regs[0], "unchanged") {
		t.Errorf("registration again of mem, which lost STAGE_UNSTAGE_VOLUME while v is staged through it (%q):\n"+
			"  outcome %v, changed %q, event %q\n"+
			"want it not Unchanged: the capabilities named among what changed", caps[0], reg.Outcome, reg.Changed, regs)
	}
}

// TestExecPluginRegisteredOnAHungSocketIsNotSaidNotStarted: plugin "ex" is declared with an
// exec block on a socket where a process is listening, but hangs in GetPluginInfo. The same
// declaration without the exec block is refused, naming the timeout. With it, the registration
// swallows whatever error the connection gave (registerPluginOnce: `case sp.Exec != nil`) and
// records the plugin healthy-unknown with last error "not started yet: the agent starts it
// (volctl agent)"; `volctl plugin register` prints that and exits 0. It was started: something
// answers on its socket and hangs, and the agent will find that socket served by a process it
// did not start. Correct: only a plugin that does not answer at all (engine.PluginNotAnswering:
// no socket, or nothing listening) is "not started yet"; a connection that reached a process
// and failed (a hang, an error, another driver) is refused as without the exec block, or at
// least recorded with that error, not "not started yet".
// Found by helper review83 (plugins).
func TestExecPluginRegisteredOnAHungSocketIsNotSaidNotStarted(t *testing.T) {
	t.Parallel()
	h := newHarnessConfig(t, nil, Config{Timeouts: csi.Timeouts{Short: time.Second, Long: time.Second}})
	h.faults.Hang(csi.RPCGetPluginInfo)

	plain := spec.Plugin{ID: "ex", Type: spec.PluginMonolith, Socket: h.socket}
	if _, err := h.e.RegisterPlugin(h.ctx, plain); err == nil || PluginNotAnswering(err) {
		t.Fatalf("precondition: registering ex without an exec block on the hung socket: %v; want it refused as a hang", err)
	}
	withExec := plain
	withExec.Exec = &spec.Exec{Command: "/bin/true"}
	info, err := h.e.RegisterPlugin(h.ctx, withExec)
	if err == nil {
		t.Errorf("register ex with an exec block on a socket whose process hangs in GetPluginInfo: registered, last error %q; "+
			"want it refused as without the exec block, not said to be not started yet", info.LastError)
	} else if !strings.Contains(err.Error(), csi.RPCGetPluginInfo) && !strings.Contains(err.Error(), "GetPluginInfo") {
		t.Errorf("refusal %v; want it to name the GetPluginInfo that hung", err)
	}
}

// TestExecPluginRegisteredOnANonSocketPathIsRefused: a regular file at an exec plugin's socket
// path is no socket the agent's process will listen on, nor one left by a process gone: the
// registration is refused naming it, as without the exec block, not recorded "not started yet".
func TestExecPluginRegisteredOnANonSocketPathIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	path := filepath.Join(t.TempDir(), "plain.sock")
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "ex", Type: spec.PluginMonolith, Socket: path, Exec: &spec.Exec{Command: "/bin/true"}})
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("register ex with an exec block on a regular file: %v; want it refused, naming the path as not a socket", err)
	}
}
