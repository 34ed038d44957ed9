package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A claim on a volume whose plugin's Probe answers ready=false is refused before admission, as
// Nomad's scheduler places no claim on a node whose plugin is not healthy: `volume ls` said
// "no: plugin not ready" while `volume claim` admitted the claim and sent the not-ready plugin
// ControllerPublishVolume and NodeStageVolume. Nothing is recorded for the refused claim, and
// nothing is sent but the Probe; once the plugin says ready, the same claim goes ahead.
func TestClaimOnAPluginNotReadyIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	notReady, ready := false, true
	h.mem.SetReady(&notReady)
	h.mem.ResetCalls()

	h.claimRefusedForItsPlugin("a plugin whose Probe says not ready", "not ready", "ready=false")
	if n := h.mem.CallCount(csi.RPCProbe); n != 1 {
		t.Errorf("the claim sent Probe %d times; want once", n)
	}
	if s := h.volumeInfo("db").Schedulability(); s.Why != PluginUnready {
		t.Errorf("volume db after the refusal: %q; want the probe's answer recorded (%q)", s, PluginUnready)
	}

	// The plugin ready again: the same claim goes ahead, and the health recorded says so.
	h.mem.SetReady(&ready)
	cl := h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if cl.State != string(store.ClaimPublished) {
		t.Fatalf("claim once the plugin is ready: %+v; want it published", cl)
	}
	if s := h.volumeInfo("db").Schedulability(); !s.OK() {
		t.Errorf("volume db after the plugin became ready and the claim went ahead: %q; want schedulable", s)
	}
}

// A claim whose plugin answers its Probe with an error (the plugin's own verdict: its backend
// is down) is refused the same way, naming the plugin's answer. A plugin that does not answer
// at all (its socket gone) is not judged here: the claim is admitted and left for reconcile as
// before (TestPluginGoneAtConnectSaysWhatIsLeft).
func TestClaimOnAPluginWhoseProbeFailsIsRefused(t *testing.T) {
	t.Parallel()
	h := claimRefusedForItsProbe(t, codes.FailedPrecondition, "backend unreachable")
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
}

// claimRefusedForItsProbe makes volume db, whose plugin answers its Probe with code and message,
// checks that a claim on it is refused (claimRefusedForItsPlugin, saying why too) and that the
// volume is then listed unschedulable for that answer, and lets the Probe pass again.
func claimRefusedForItsProbe(t *testing.T, code codes.Code, message string, why ...string) *harness {
	t.Helper()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.faults.Inject(csi.RPCProbe, csitest.Fault{Code: code, Message: message})
	h.mem.ResetCalls()

	h.claimRefusedForItsPlugin("a plugin whose Probe answers "+code.String(), append([]string{"unhealthy", message}, why...)...)
	if s := h.volumeInfo("db").Schedulability(); s.Why != PluginDown || !strings.Contains(s.Detail, message) {
		t.Errorf("volume db after the refusal: %q (%s); want the probe's failure recorded", s, s.Detail)
	}
	h.faults.Clear(csi.RPCProbe)
	return h
}

// TestProbeUnavailableAnsweredIsNotAPluginGone: a plugin that answers its Probe UNAVAILABLE
// itself (its storage backend out of reach, as ceph-csi says) is running and unhealthy, and
// its claim is refused as for any other failing Probe. Before, gRPC's one code for "the plugin
// said so" and "no connection" read as a plugin not answering at all, which is not judged: the
// claim was admitted and published through a plugin `plugin status` called unhealthy, and its
// error asked whether the plugin was running and listening. A plugin that holds the Probe past
// volctl's timeout is judged too. A plugin that stops while it holds the Probe did not answer,
// and its claim is still admitted and left for reconcile.
func TestProbeUnavailableAnsweredIsNotAPluginGone(t *testing.T) {
	t.Parallel()
	h := claimRefusedForItsProbe(t, codes.Unavailable, "ceph monitors unreachable", "is running and answered UNAVAILABLE itself")

	// A plugin that holds the Probe past volctl's timeout (hung, or SIGSTOPped) did not answer
	// either, but is judged: it is no plugin starting, and the claim's RPCs would each wait for
	// the long timeout.
	h.open(Config{Timeouts: csi.Timeouts{Short: time.Second, Long: time.Minute}})
	h.faults.Hang(csi.RPCProbe)
	h.mem.ResetCalls()
	h.claimRefusedForItsPlugin("a plugin that holds its Probe past the timeout", "unhealthy", "did not answer within 1s")
	h.faults.Clear(csi.RPCProbe)

	// The plugin stops with the Probe in its hands: no answer, no verdict on its health.
	h.open(Config{})
	h.faults.Hang(csi.RPCProbe)
	done := make(chan error, 1)
	go func() {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		done <- err
	}()
	for h.faults.Held() == 0 {
		time.Sleep(time.Millisecond)
	}
	h.stopServe()
	err := <-done
	if err == nil || errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("claim whose plugin stopped holding its Probe: %v; want it admitted and left for reconcile, not refused", err)
	}
	if live := h.liveClaims("db"); len(live) != 1 || !live[0].NeedsReconcile {
		t.Errorf("claims after the plugin stopped holding the Probe = %+v; want one, left for reconcile", live)
	}
}

// Undoing is always allowed: a plugin that stops being ready after a claim was published still
// gets the claim's release, a claim again of the alloc that holds it is handed the same claim,
// and reconcile restores a published claim whose mounts a reboot took.
func TestPluginNotReadyStillUndoesAndRestoresClaims(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("db", "web-0", spec.SingleNodeWriter)
	h.create(volume("logs", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "logs", Alloc: "web-0"})
	notReady := false
	h.mem.SetReady(&notReady)

	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "logs", Alloc: "web-0"}); err != nil {
		t.Errorf("claim again of the alloc holding the claim, its plugin not ready: %v; want the same claim", err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("reconcile restoring a claim through a plugin not ready: %+v, %v", rep, err)
	}
	if live := h.liveClaims("db"); len(live) != 1 || live[0].State != store.ClaimPublished {
		t.Errorf("claims on db after reconcile = %+v; want it restored, published", live)
	}
	h.release("db", "web-0")
	h.release("logs", "web-0")
	if live := append(h.liveClaims("db"), h.liveClaims("logs")...); len(live) != 0 {
		t.Errorf("claims after the releases = %+v; want none", live)
	}
}

// claimRefusedForItsPlugin claims volume db for alloc web-0, whose plugin mem (what) is not
// healthy, and checks the claim is refused as a conflict (exit 4, as the other refusals of a
// volume that cannot take claims) saying why, with no claim, no intent and no RPC left.
func (h *harness) claimRefusedForItsPlugin(what string, why ...string) {
	h.t.Helper()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if err == nil {
		h.t.Fatalf("a claim on %s was admitted and published", what)
	}
	if !errors.Is(err, ErrConflict) {
		h.t.Errorf("refusal %q is not a conflict", err)
	}
	for _, want := range append([]string{`plugin "mem"`, `volume "db"`, "no claim was admitted", "volctl plugin status mem"}, why...) {
		if !strings.Contains(err.Error(), want) {
			h.t.Errorf("refusal = %q; want it to say %q", err, want)
		}
	}
	if live := h.liveClaims("db"); len(live) != 0 {
		h.t.Errorf("claims after the refusal = %+v; want none", live)
	}
	if st, ok := h.staging("db"); ok {
		h.t.Errorf("staging after the refusal = %+v; want none (no intent recorded)", st)
	}
	if rpcs := h.rpcs(); len(rpcs) != 0 {
		h.t.Errorf("RPCs sent for the refused claim = %v; want none", rpcs)
	}
}

// TestClaimProbesBeforeItsOneAdmission: a new claim sends its Probe before admission, whose
// one transaction then inserts the claim. Before, admission ran first, answered "not probed
// yet" (a write transaction rolled back: the write lock taken, the volume, its handover, its
// claims, its plugin and its staging read), and ran again after the Probe: about 0.07 of the
// in-process lifecycle's ratio to its raw RPCs (BENCHMARKS.md). What the preview cannot tell
// falls back to that (the claim again of an alloc whose claim was released meanwhile); what it
// can tell is not probed: a claim again of the alloc holding the claim, and a claim the access
// mode refuses, which are handed back or refused as at once, without a word to the plugin.
func TestClaimProbesBeforeItsOneAdmission(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.open(Config{})
	h.mem.ResetCalls()
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if n := h.mem.CallCount(csi.RPCProbe); n != 1 {
		t.Errorf("a new claim sent Probe %d times; want once", n)
	}
	if st := h.e.store.Stats(); st.RolledBack != 0 || st.DurableWrites != 1 {
		t.Errorf("a new claim in a new process: %+v; want one admission (one durable commit), no write rolled back", st)
	}

	notReady := false
	h.mem.SetReady(&notReady)
	h.open(Config{})
	h.mem.ResetCalls()
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err != nil {
		t.Errorf("claim again of the alloc holding the claim, its plugin not ready: %v; want the same claim", err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-1"}); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "web-0") {
		t.Errorf("a second writer's claim on a single-node-writer volume = %v; want a conflict naming the holder", err)
	}
	if n := h.mem.CallCount(csi.RPCProbe); n != 0 {
		t.Errorf("a claim again and a claim the access mode refuses sent Probe %d times; want none", n)
	}
}

// TestRegisterOfAPluginAnsweringUnavailableIsAnAnswer: `plugin register` waits, up to --wait,
// for a plugin that does not answer at all (PluginNotAnswering), as while it restarts. A
// plugin that answers its fingerprint's first question UNAVAILABLE itself is there, and its
// answer is the registration's error at once (before, it was waited on as if it were not there,
// and the error asked whether it was running and listening).
func TestRegisterOfAPluginAnsweringUnavailableIsAnAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCGetPluginInfo, csitest.Fault{Code: codes.Unavailable, Message: "backend starting"})
	_, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "again", Type: spec.PluginMonolith, Socket: h.socket})
	if err == nil || PluginNotAnswering(err) || !strings.Contains(err.Error(), "is running and answered UNAVAILABLE itself") {
		t.Errorf("register of a plugin answering GetPluginInfo UNAVAILABLE: %v (not answering: %v); want its answer, not a plugin to wait for", err, PluginNotAnswering(err))
	}
	h.faults.Clear(csi.RPCGetPluginInfo)
	h.stopServe()
	_, err = h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "again", Type: spec.PluginMonolith, Socket: h.socket})
	if err == nil || !PluginNotAnswering(err) {
		t.Errorf("register of a plugin whose socket is gone: %v; want a plugin not answering, to wait for", err)
	}
}
