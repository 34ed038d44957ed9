package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestNodeOnlyRegistrationRefusedForGoodKeepsTheRecordedSecrets: volume db, created through
// a plugin that expands on the node alone (node EXPAND_VOLUME, no controller EXPAND_VOLUME),
// is registered again with a larger capacity_min and a mistyped secret. The registration grows
// it first (expandRegistered, sent with the spec's secrets), and the expansion's record commit
// writes the whole volume, the spec's secrets in it, before its NodeExpandVolume is sent. The
// plugin refuses that NodeExpandVolume for good at every target (INVALID_ARGUMENT: the bad
// credential), so nodeOnlyRefused puts the size, capacity_min/max and debts back and the
// registration fails, never reaching its own commit — but the secrets the refused spec
// carried stay recorded in place of the working one: every later claim, unpublish and expand
// is sent the credential of a registration that was refused.
//
// Correct behaviour: a registration that fails changes nothing of the record, as the
// controller path's refusal puts the secrets back (putSecretsBack,
// TestRegistrationWhoseExpansionIsRefusedKeepsTheRecordedSecrets): nodeOnlyRefused puts back
// orig's secrets (and mount options) along with its size.
// Found by helper review82 (ownc).
func TestNodeOnlyRegistrationRefusedForGoodKeepsTheRecordedSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	sv := volume("db")
	sv.Secrets = spec.Secrets{"token": "working-cred"}
	v := h.create(sv) // 1 MiB
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.InvalidArgument, Message: "bad credential"})

	re := sv
	re.ExternalID = v.ExternalID
	re.CapacityMin = 4 * mib
	re.Secrets = spec.Secrets{"token": "mistyped-cred"}
	_, err := h.e.RegisterVolume(h.ctx, re)
	if err == nil {
		t.Fatalf("premise: the registration whose node-only expansion the plugin refused succeeded")
	}
	if h.faults.Calls(csi.RPCNodeExpandVolume) == 0 {
		t.Fatalf("premise: no NodeExpandVolume was sent (error: %v)", err)
	}
	if got := h.volumeInfo("db"); got.CapacityBytes != v.CapacityBytes || got.NodeExpansionOwed != 0 {
		t.Fatalf("premise: the refused node-only expansion was not put back (recorded at %s, owed %s): %v",
			spec.FormatSize(got.CapacityBytes), spec.FormatSize(got.NodeExpansionOwed), err)
	}
	if got := h.volumeRow("db").Secrets["token"]; got != "working-cred" {
		t.Errorf("the registration failed (%v), but volume db's recorded secret is now %q, the refused spec's, where it was %q: "+
			"a failed registration replaced the working credential", err, got, "working-cred")
	}
}

// TestNodeOnlyRegistrationRefusedBesideAPendingExpansionDoesNotSayItsOwnIsPending: volume v
// has a ControllerExpandVolume to 4MiB pending (its answer lost). Its plugin comes back
// expanding on the node alone, 8MiB at most, and v's spec is registered again with capacity_min
// 16MiB. The NodeExpandVolume is refused for good (OUT_OF_RANGE), and nodeOnlyRefused rightly
// puts the earlier pending mark (4MiB) back. registerRound then finds a pending mark and says
// "the registration is not recorded, only the expansion it asked, left pending: once that is
// finished, register the spec again": the expansion it asked (16MiB) was refused for good, not
// left pending; the one pending is an earlier expand's, and registering again once it is
// finished is refused the same way. The wrong expansion named, advice that goes round.
//
// Correct behaviour: the refusal says the registration's expansion was refused for good
// (nothing grew, not recorded), naming a capacity_min the plugin takes, and mentions the
// earlier pending expansion as the earlier one it is.
// Found by helper review82 (ownc).
func TestNodeOnlyRegistrationRefusedBesideAPendingExpansionDoesNotSayItsOwnIsPending(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes = false })
	sv := volume("v")
	v := h.create(sv) // 1 MiB
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatalf("premise: an expand whose answers were all lost succeeded")
	}
	h.faults.Clear(csi.RPCControllerExpandVolume)
	if got := h.volumeInfo("v"); got.ExpansionPending != 4*mib {
		t.Fatalf("premise: after the lost answer, pending %s; want 4MiB", spec.FormatSize(got.ExpansionPending))
	}
	h.restartWith(func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume = false
		c.MaxVolumeSize = 8 * mib
	})

	re := sv
	re.ExternalID = v.ExternalID
	re.CapacityMin = 16 * mib
	_, err := h.e.RegisterVolume(h.ctx, re)
	if err == nil {
		t.Fatalf("premise: the registration whose node-only expansion to 16MiB the plugin refused succeeded")
	}
	if h.faults.Calls(csi.RPCNodeExpandVolume) == 0 {
		t.Fatalf("premise: no NodeExpandVolume was sent (error: %v)", err)
	}
	if got := h.volumeInfo("v"); got.ExpansionPending != 4*mib {
		t.Fatalf("premise: the earlier pending expansion was not kept (pending %s): %v", spec.FormatSize(got.ExpansionPending), err)
	}
	if strings.Contains(err.Error(), "only the expansion it asked, left pending") {
		t.Errorf("the registration's expansion to 16MiB was refused for good (nothing grew), but its error says the expansion it asked is left pending "+
			"and to register again once that is finished (which is refused the same way): %v", err)
	}
}
