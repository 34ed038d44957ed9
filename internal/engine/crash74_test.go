package engine

import (
	"maps"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// killAtFailpoint runs op on h's engine, cut short the first time op's own goroutine passes
// failpoint name, as a kill -9 there would (the hook panics; see cutShortWhen), and then opens
// the engine anew on the same state dir, as the next volctl process. It reports whether op
// was cut short.
func (h *hostpathEngine) killAtFailpoint(t *testing.T, name string, op func()) bool {
	t.Helper()
	self := goroutineID()
	e := h.e
	cut := false
	func() {
		e.failpointHook = func(got string) {
			if got == name && goroutineID() == self {
				panic(seqCrash{got})
			}
		}
		defer func() {
			e.failpointHook = nil
			if p := recover(); p != nil {
				if _, ok := p.(seqCrash); !ok {
					panic(p)
				}
				cut = true
			}
		}()
		op()
	}()
	e.Close()
	ne, err := Open(h.ctx, Config{StateDir: h.state, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ne.Close() })
	h.e = ne
	return cut
}

// TestRestoreKilledAfterItsPublishFollowingARefusedOneStacksNoSecondMount: after a reboot,
// reconcile restores a published claim and the plugin refuses the restore's NodePublishVolume
// once (INTERNAL, answered: nothing mounted), leaving the claim node-staged, degraded, its
// last error NodePublishVolume's INTERNAL. The next pass sends NodePublishVolume again, the
// plugin mounts the target, and volctl is killed before the answer is recorded
// (rpc:NodePublishVolume). The pass after that sends NodePublishVolume a third time onto the
// mounted target: publishUnanswered (newCheckpoint) asks sentUnanswered of the claim's last
// error, which is the earlier, answered refusal's (nodePublish's commit before the RPC does
// not clear it), so publishedBefore treats the killed publish as never sent. A plugin that
// mounts without looking first stacks a second mount there, which the claim's release
// leaves behind. Correct: a degraded claim whose NodePublishVolume may have been sent since
// its last recorded failure (the commit before the RPC records that, or Target NotAccepted is
// taken as enough, checkTarget deciding) is looked at, recorded published without a second
// NodePublishVolume, one mount at its target, and released cleanly.
// Found by helper review74.
func TestRestoreKilledAfterItsPublishFollowingARefusedOneStacksNoSecondMount(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	var never atomic.Bool
	h := newHostpathEngineAt(t, hostpathtest.MountDir(t), hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true},
		csitest.WithInterceptor(remountingWithALateAnswer(&never, 0)))
	cl := h.claimNew(t, "data", "a", spec.SingleNodeWriter)
	h.writeThenReboot(t, cl, "data")

	h.faults.FailOnce(csi.RPCNodePublishVolume, codes.Internal)
	if rep, err := h.e.Reconcile(h.ctx); err == nil || len(rep.Problems) != 1 {
		t.Fatalf("first pass: the restore's NodePublishVolume was to be refused once, one problem: %+v, %v", rep, err)
	}
	st, err := h.e.ClaimInfo(h.ctx, "data", "a")
	if err != nil || st.State != "node-staged" || !st.Degraded || st.LastRPC != csi.RPCNodePublishVolume {
		t.Fatalf("precondition: claim after the refused restore = %+v, %v; want node-staged, degraded, NodePublishVolume's failure recorded", st, err)
	}
	if hostpathtest.Mounted(t, cl.TargetPath) {
		t.Fatalf("precondition: the refused NodePublishVolume mounted the target")
	}

	if !h.killAtFailpoint(t, "rpc:NodePublishVolume", func() { _, _ = h.e.Reconcile(h.ctx) }) {
		t.Fatalf("precondition: the second pass never sent the restore's NodePublishVolume (rpc:NodePublishVolume)")
	}
	if !hostpathtest.Mounted(t, cl.TargetPath) {
		t.Fatalf("precondition: the plugin did not mount the target at the NodePublishVolume the kill cut short")
	}

	publishes := h.faults.Calls(csi.RPCNodePublishVolume)
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("the pass after the kill: %v (%+v)", err, rep)
	}
	n := mountsStackedAt(t, cl.TargetPath)
	sent := h.faults.Calls(csi.RPCNodePublishVolume) - publishes
	if n != 1 || sent != 0 {
		t.Errorf("after the pass that finished the restore the kill cut short: %d mounts at %s, NodePublishVolume sent %d more time(s) onto the mounted target; want one mount, none sent",
			n, cl.TargetPath, sent)
	}
	releasesCleanly(t, h, cl)
}

// TestRegistrationRefusedAtItsExpansionKeepsTheRecordedSecrets: volume db is recorded with the
// secret its plugin takes. A registration again with a larger capacity_min and a mistyped
// secret (which this plugin's ValidateVolumeCapabilities does not check, its
// ControllerExpandVolume does) has its expansion refused for good (UNAUTHENTICATED), and the
// registration fails: nothing of it was to be recorded. But recordSecretsSent (expandLockedSaying)
// wrote the spec's secrets into the volume's record in the expansion intent's commit, and the
// refusal's path (expansionAnswered) clears the intent without putting the record's secrets
// back: the refused registration has replaced the working credential with the mistyped one,
// and every later RPC of the volume (the same expand, a claim's publish, the delete) goes with
// it and is refused. Correct: an expansion refused for good undoes what its intent recorded,
// the secrets included (or they are recorded only once the plugin answered OK or the answer was
// lost), so the record keeps the secret it had, and the expand the user runs next works.
// Found by helper review74.
func TestRegistrationRefusedAtItsExpansionKeepsTheRecordedSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes = false })
	sv := volume("db")
	sv.Secrets = spec.Secrets{"token": "good-cred"}
	v := h.create(sv)
	if v.CapacityBytes <= 0 || v.CapacityBytes >= 2<<30 {
		t.Fatalf("premise: volume db is created below 2 GiB (%d bytes)", v.CapacityBytes)
	}
	rejectOthers := func(req proto.Message) bool {
		s, ok := req.(interface{ GetSecrets() map[string]string })
		return ok && s.GetSecrets()["token"] != "good-cred"
	}
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Code: codes.Unauthenticated, Message: "credential rejected", When: rejectOthers})

	re := sv
	re.ExternalID = v.ExternalID
	re.CapacityMin = 2 << 30
	re.Secrets = spec.Secrets{"token": "mistyped-cred"}
	if _, err := h.e.RegisterVolume(h.ctx, re); err == nil {
		t.Fatalf("premise: the registration whose expansion the plugin refused for good failed; it said nothing")
	} else {
		t.Logf("the refused registration: %v", err)
	}
	if got := h.volumeInfo("db"); got.ExpansionPending != 0 {
		t.Fatalf("premise: the refused expansion is not left pending (pending %d)", got.ExpansionPending)
	}
	rec, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get("db") })
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(rec.Secrets, sv.Secrets) {
		t.Errorf("after a registration refused at its expansion, volume db's record holds the refused spec's secret (token %q), not the one it had (%q)",
			rec.Secrets["token"], sv.Secrets["token"])
	}
	if _, err := h.e.ExpandVolume(h.ctx, "db", 2<<30, 0); err != nil {
		t.Errorf("the expand run after the refused registration, with the record's secrets: %v; want it done with the secret the plugin takes", err)
	}
}
