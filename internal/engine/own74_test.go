package engine

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A registration again with rotated secrets and a larger capacity_min sends its
// ControllerExpandVolume with the spec's (new) secrets (expandRegistered, since
// TestRegisterAgainWithRotatedSecretsExpandsWithThem), but the volume's record keeps the old
// ones until the registration's own commit, and the expansion's intent
// (SetExpansionIntentOver) records no secrets. When that expansion's answer is lost (a
// timeout, a reset connection), the registration fails leaving the expansion pending, and its
// error advises "run the same `volctl volume expand db --size 2GiB` again, or `volctl
// reconcile`": both replay the pending ControllerExpandVolume with the record's old, rotated
// credential, which the plugin refuses (UNAUTHENTICATED) every time. Reconcile reports the
// volume failed on every pass, the record stays at the old size with the expansion pending for
// good, and only a registration again, which the error does not name, sends the secret the
// plugin takes. Before the change the expansion was refused outright with nothing left pending.
//
// Correct behaviour: what the error advises finishes the expansion: the pending expansion is
// replayed with the secrets it was first sent with (recorded with the intent, or the record
// given them before the RPC goes out), or the advice names the registration again.
// Found by helper review74 (the own review).
func TestRegistrationExpansionWithRotatedSecretsLostAnswerFinishesAsAdvised(t *testing.T) {
	t.Parallel()
	// A plugin that cannot list volumes: a replay is sent, not taken from a listing.
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes = false })
	sv := volume("db")
	sv.Secrets = spec.Secrets{"token": "rotated-old-cred"}
	v := h.create(sv)
	if v.CapacityBytes <= 0 || v.CapacityBytes >= 2<<30 {
		t.Fatalf("premise: volume db is created below 2 GiB at a known size (%d bytes)", v.CapacityBytes)
	}
	// Rotated on the backend: the plugin takes the new credential only.
	rejectOld := func(req proto.Message) bool {
		s, ok := req.(interface{ GetSecrets() map[string]string })
		return !ok || s.GetSecrets()["token"] != "rotated-new-cred"
	}
	h.faults.Inject(csi.RPCValidateVolumeCapabilities, csitest.Fault{Code: codes.Unauthenticated, Message: "credential rejected", When: rejectOld})
	// The expansion is done, its answer lost, at each of volctl's attempts.
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Code: codes.DeadlineExceeded, Times: 10})

	re := sv
	re.ExternalID = v.ExternalID
	re.CapacityMin = 2 << 30
	re.Secrets = spec.Secrets{"token": "rotated-new-cred"}
	_, regErr := h.e.RegisterVolume(h.ctx, re)
	if regErr == nil {
		t.Fatalf("premise: the registration whose expansion answer was lost failed; it said nothing")
	}
	if got := h.volumeInfo("db"); got.ExpansionPending != 2<<30 {
		t.Fatalf("premise: the expansion to 2GiB is left pending (pending %d); the registration said: %v", got.ExpansionPending, regErr)
	}
	h.faults.Clear(csi.RPCControllerExpandVolume)
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Code: codes.Unauthenticated, Message: "credential rejected", When: rejectOld})

	// Follow the advice the registration gave.
	msg := regErr.Error()
	var followed []string
	if strings.Contains(msg, "volctl reconcile") {
		rep, err := h.e.Reconcile(context.WithoutCancel(h.ctx))
		followed = append(followed, "volctl reconcile")
		if err != nil || !rep.OK() {
			t.Logf("the advised reconcile: %v %+v", err, rep.Problems)
		}
	}
	if strings.Contains(msg, "volctl volume expand db --size 2GiB") {
		_, err := h.e.ExpandVolume(h.ctx, "db", 2<<30, 0)
		followed = append(followed, "volctl volume expand db --size 2GiB")
		if err != nil {
			t.Logf("the advised expand: %v", err)
		}
	}
	if strings.Contains(msg, "volctl volume register") {
		_, err := h.e.RegisterVolume(h.ctx, re)
		followed = append(followed, "volctl volume register")
		if err != nil {
			t.Logf("the advised registration again: %v", err)
		}
	}
	if len(followed) == 0 {
		t.Fatalf("the registration's error advises no command to finish the pending expansion: %v", regErr)
	}
	if got := h.volumeInfo("db"); got.ExpansionPending != 0 || got.CapacityBytes < 2<<30 {
		t.Errorf("after following the registration's advice (%s), volume db is recorded at %d bytes with an expansion to %d still pending: "+
			"each replay went with the record's old, rotated secret, which the plugin refuses; the registration said: %v",
			strings.Join(followed, ", then "), got.CapacityBytes, got.ExpansionPending, regErr)
	}
}
