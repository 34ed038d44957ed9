package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// recorder is an Observer that keeps what it was told, in order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

func (r *recorder) PluginProbed(plugin string, healthy, ready bool, latency time.Duration) {
	r.add("probed %s healthy=%t ready=%t latency>0=%t", plugin, healthy, ready, latency > 0)
}
func (r *recorder) PluginGone(plugin string)              { r.add("gone %s", plugin) }
func (r *recorder) PluginRestarted(plugin, reason string) { r.add("restarted %s %s", plugin, reason) }
func (r *recorder) Reconciled(trigger string, rep engine.ReconcileReport, err error) {
	r.add("reconciled %s ok=%t err=%v", trigger, rep.OK(), err)
}
func (r *recorder) Ready()    { r.add("ready") }
func (r *recorder) Stopping() { r.add("stopping") }

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) has(prefix string) bool {
	return slices.ContainsFunc(r.list(), func(e string) bool { return strings.HasPrefix(e, prefix) })
}

// startAgentWith runs an agent built from the fixture's config changed by edit; stop ends it.
func (f *fixture) startAgentWith(edit func(*Config)) (a *Agent, stop func() error) {
	f.t.Helper()
	cfg := Config{Engine: f.e, Settings: testSettings, Now: f.agentClock(),
		Logger: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	edit(&cfg)
	a, err := New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	f.t.Cleanup(func() { _ = stop() })
	return a, stop
}

// notifySocket listens on a unix datagram socket as systemd does for a Type=notify unit and
// returns what it receives, one datagram per string.
func notifySocket(t *testing.T, name string) <-chan string {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return ch
}

func receive(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(60 * time.Second):
		t.Fatalf("timed out waiting for %s on the notify socket", what)
		return ""
	}
}

// TestSdNotify: SdNotify writes the state to $NOTIFY_SOCKET, a path or an abstract name
// (@...), and does nothing without it.
func TestSdNotify(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := SdNotify("READY=1"); err != nil {
		t.Fatalf("without NOTIFY_SOCKET: %v", err)
	}
	for _, name := range []string{
		filepath.Join(t.TempDir(), "notify.sock"),
		fmt.Sprintf("@volctl-test-notify-%d-%d", syscall.Getpid(), time.Now().UnixNano()),
	} {
		ch := notifySocket(t, name)
		t.Setenv("NOTIFY_SOCKET", name)
		if err := SdNotify("READY=1"); err != nil {
			t.Fatalf("NOTIFY_SOCKET=%s: %v", name, err)
		}
		if got := receive(t, ch, "READY=1"); got != "READY=1" {
			t.Errorf("NOTIFY_SOCKET=%s received %q, want READY=1", name, got)
		}
	}
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "nobody-listens.sock"))
	if err := SdNotify("READY=1"); err == nil || !strings.Contains(err.Error(), "nobody-listens.sock") {
		t.Errorf("a socket nobody listens on: %v, want an error naming it", err)
	}
	t.Setenv("NOTIFY_SOCKET", "relative.sock")
	if err := SdNotify("READY=1"); err == nil || !strings.Contains(err.Error(), "relative.sock") {
		t.Errorf("a relative NOTIFY_SOCKET: %v, want an error naming it", err)
	}
}

// TestAgentNotifiesReadyOncePluginsHealthyAndRestored: the agent tells the service manager
// READY=1 only after its plugin was healthy and the start-up reconcile ran, and STOPPING=1 when
// it stops; Status lists what it supervises, and the observer hears of probes, restarts and
// reconcile passes.
func TestAgentNotifiesReadyOncePluginsHealthyAndRestored(t *testing.T) {
	f := newFixture(t)
	name := filepath.Join(f.dir, "notify.sock")
	ch := notifySocket(t, name)
	t.Setenv("NOTIFY_SOCKET", name)
	f.register(f.execPlugin("hp", "hostpath"))
	rec := &recorder{}
	// No health timeout in play (an hour: never, in a test): after it, READY=1 is rightly sent
	// with the plugin not healthy yet (the start-up reconcile waits no longer), and a race-built
	// plugin on a loaded machine took longer than testSettings' 5 s to serve (citime35). What
	// this test holds, READY=1 after a healthy probe, does not depend on the machine's pace.
	a, stop := f.startAgentWith(func(c *Config) { c.Observer = rec; c.Settings.HealthTimeout = time.Hour })

	if got := receive(t, ch, "READY=1"); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	if !a.Ready() {
		t.Error("Ready() is false after READY=1 was sent")
	}
	if p := f.plugin("hp"); !p.Healthy {
		t.Errorf("READY=1 sent while the plugin is not healthy: %+v", p)
	}
	events := rec.list()
	iReady := slices.Index(events, "ready")
	iRec := slices.IndexFunc(events, func(e string) bool { return strings.HasPrefix(e, "reconciled start ") })
	iProbe := slices.Index(events, "probed hp healthy=true ready=true latency>0=true")
	if iReady < 0 || iRec < 0 || iProbe < 0 || iRec > iReady || iProbe > iRec {
		t.Errorf("observer heard %q; want a healthy probe of hp, then the start reconcile, then ready", events)
	}
	st := a.Status()
	if !st.Ready || len(st.Plugins) != 1 || st.Plugins[0].ID != "hp" || !st.Plugins[0].Supervised ||
		st.Plugins[0].Health != "healthy" || st.Plugins[0].Pid != f.pid("hp") || st.Plugins[0].Pid == 0 {
		t.Errorf("Status = %+v, want ready, hp supervised and healthy with pid %d", st, f.pid("hp"))
	}
	// plugin status says so too (agent37): the agent runs it, with its pid, and can stop and
	// restart it.
	first := f.pid("hp")
	if p := f.supervisionOf("hp", engine.SupervisionRuns); !p.Supervised || p.Supervision.Pid != first || !p.Supervision.CanStop ||
		!p.Supervision.CanRestart || p.Supervision.AgentPid != syscall.Getpid() {
		t.Errorf("plugin status: supervised %v, supervision %+v; want supervised, run by this agent with pid %d, stop and restart", p.Supervised, p.Supervision, first)
	}

	// Killed, the plugin is restarted: the observer and Status count it.
	if err := syscall.Kill(f.pid("hp"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the observer to hear of the restart", func() bool { return rec.has("restarted hp exited") })
	waitFor(t, "Status to count the restart", func() bool { return a.Status().Plugins[0].Restarts == 1 })
	waitFor(t, "plugin status to name the restarted process", func() bool {
		s := f.plugin("hp").Supervision
		return s != nil && s.Mode == engine.SupervisionRuns && s.Pid != first && s.Pid == f.pid("hp")
	})
	second := f.pid("hp")

	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if s := f.plugin("hp").Supervision; s == nil || s.Mode != engine.SupervisionStopped || s.Pid != second || s.CanStop || !strings.Contains(s.Words(), "stopped it") {
		t.Errorf("after the agent's clean stop: supervision %+v; want stopped, pid %d", s, second)
	}
	if got := receive(t, ch, "STOPPING=1"); got != "STOPPING=1" {
		t.Errorf("notification on stop %q, want STOPPING=1", got)
	}
}

// TestAgentReadyWithoutNotifySocket: without a service manager, nothing is sent and
// nothing fails; the agent still becomes ready.
func TestAgentReadyWithoutNotifySocket(t *testing.T) {
	f := newFixture(t)
	t.Setenv("NOTIFY_SOCKET", "")
	rec := &recorder{}
	a, stop := f.startAgentWith(func(c *Config) { c.Observer = rec })
	waitFor(t, "the agent to be ready", a.Ready)
	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if strings.Contains(f.logs.String(), "telling the service manager") {
		t.Errorf("the agent warned about a service manager it has none of:\n%s", f.logs)
	}
}
