package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// deletedThroughNomad deletes volume db's storage through its plugin, then takes it out of
// Nomad n, as `nomad volume delete db` does (DeleteVolume, then the volume gone from Nomad).
func deletedThroughNomad(t *testing.T, h *cliHarness, n *fakeNomad) {
	t.Helper()
	asNomadOnDB(t, h, func(c *csi.Client, id string) {
		if err := c.DeleteVolume(context.Background(), csi.DeleteVolumeRequest{VolumeID: id}); err != nil {
			t.Fatalf("DeleteVolume of db, as nomad volume delete sends it: %v", err)
		}
	})
	n.mu.Lock()
	delete(n.vols, "default/db")
	n.mu.Unlock()
}

// A volume handed over, then deleted in Nomad (`nomad volume delete db`: its storage deleted
// through the plugin, the volume gone from Nomad). `volctl nomad release db` asks the plugin
// what size the volume has (ListVolumes) and the plugin does not list it, yet the release says
// only "Took volume back; volctl may claim it again": the record stays ready and schedulable,
// and the next claim fails in NodeStageVolume with NOT_FOUND. The take-back learnt the storage
// is gone; before, it said nothing of it. Now a warning says so, and what forgets the record
// (SizeCheck.NotListed). Found by helper review62.
func TestNomadReleaseOfAVolumeDeletedInNomadSaysItsStorageIsGone(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	deletedThroughNomad(t, h, n)
	ios, _, out, errOut := iostreams.Test()
	err := nomadReleaseRun(context.Background(), &NomadReleaseOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}})
	said := out.String() + errOut.String()
	if err != nil {
		said += err.Error()
	}
	_, cerr := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if cerr == nil {
		t.Fatal("the volume whose storage was deleted through its plugin was claimed")
	}
	if !strings.Contains(said, "its plugin no longer has its storage") || !strings.Contains(said, "`volctl volume deregister db` forgets the record") {
		t.Errorf("release of a volume whose storage Nomad deleted (its plugin lists it no more) said only:\n%s(err %v)\nand then a claim failed: %v\nwant the release to say the plugin no longer has the volume's storage",
			said, err, cerr)
	}
}

// A registration Nomad did not answer, which it applied after all (Nomad has the volume, as
// sent). `volctl nomad release db` refuses, "still registered". Before, it advised only `nomad
// volume deregister ... db` first; followed, the next release refused again, the mark still
// unsettled, now asking to register the volume in Nomad again (handing it back to Nomad's
// allocs) and to deregister it a second time. Now the first answer names the registration
// again that settles the mark, then the deregistration: followed in that order, the release
// takes the volume back. Found by helper review62.
func TestNomadReleaseOfAnUnsettledHandoverNomadAppliedWorksAsAdvised(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	a.setOnPut(hangUp)
	if _, _, err := registerIn(h, a); err == nil || !handedOver(t, h) {
		t.Fatalf("register without an answer: %v (marked: %v)", err, handedOver(t, h))
	}
	a.take("default", "db") // Nomad applied it after all
	a.setOnPut(nil)
	_, first := runNomadRelease(h, a.client, nil)
	if first == nil || !handedOver(t, h) || !strings.Contains(first.Error(), "still registered") {
		t.Fatalf("release while Nomad has the volume: %v (marked: %v)", first, handedOver(t, h))
	}
	if !strings.Contains(first.Error(), "volctl nomad register db` (NOMAD_REGION unset) again settles it") || !strings.Contains(first.Error(), "nomad volume deregister") {
		t.Fatalf("release of an unsettled handover Nomad applied = %v\nwant it to name the registration again that settles it, then the deregistration", first)
	}
	// As advised: the registration again (Nomad answers it now), the deregistration, the release.
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatalf("registering again, as advised: %v", err)
	}
	a.mu.Lock()
	delete(a.vols, "default/db")
	a.mu.Unlock()
	if _, err := runNomadRelease(h, a.client, nil); err != nil || handedOver(t, h) {
		t.Errorf("release after the advice was followed: %v (still marked: %v)", err, handedOver(t, h))
	}
}
