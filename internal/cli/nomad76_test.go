package cli

import (
	"context"
	"github.com/volctl/volctl/internal/iostreams"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestNomadReleaseOfAVolumeOfUnknownSizeDoesNotSayNomadGrewIt: a volume registered with no
// size (its record has none: CapacityBytes 0) is handed over to Nomad, which changes nothing,
// and is deregistered there. `volctl nomad release` asks the plugin its size, which lists it at
// the 10MiB it always had, and says "Volume "db" is 10MiB as its plugin lists it, grown while
// in Nomad (none recorded): recorded" (and the volume-expand event "grown while handed over to
// Nomad (volctl had 0)"): a lie, Nomad grew nothing; volctl just did not know the size
// (engine recordListedSize, cli sizeAfterTakeBack take any listing above currentSize, the
// capacity_min of a record of unknown size, for a growth in Nomad). Correct behaviour: a
// record with no size is said to have its size learnt now, as the expand and the registration
// again word it (unknownsize50), never "grown while in Nomad". Found by helper review76.
func TestNomadReleaseOfAVolumeOfUnknownSizeDoesNotSayNomadGrewIt(t *testing.T) {
	h := nomadHarness(t)
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	// Forgotten (the storage stays) and registered again without a size: none recorded.
	if _, _, err := h.e.DeregisterVolumeReleasing(h.ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RegisterVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "hp", ExternalID: info.ExternalID,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.CapacityBytes != 0 {
		t.Fatalf("precondition: db registered without a size has %d bytes recorded (%v), want none", v.CapacityBytes, err)
	}
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	// Nomad changes nothing; deregistered there.
	n.mu.Lock()
	delete(n.vols, "default/db")
	n.mu.Unlock()
	out, err := runNomadRelease(h, n.client, nil)
	if err != nil || handedOver(t, h) {
		t.Fatalf("release once Nomad has no such volume: %v (still marked: %v)", err, handedOver(t, h))
	}
	if strings.Contains(out, "grown while in Nomad") || !strings.Contains(out, "not known before") {
		t.Errorf("release of a volume Nomad never grew, whose size volctl did not know: %q\nwant it to say its size, not known before, is recorded now, not that Nomad grew it", out)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.CapacityBytes != 10<<20 {
		t.Errorf("after the take-back db is recorded at %d bytes (%v); want the 10MiB its plugin lists", v.CapacityBytes, err)
	}
	events, err := h.e.Events(h.ctx, 0, engine.EventFilter{VolumeID: "db"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if strings.Contains(ev.Message, "grown while handed over to Nomad") {
			t.Errorf("event %s: %q says Nomad grew a volume whose size volctl did not know", ev.Kind, ev.Message)
		}
	}
}

// TestNomadRegisterForcedPastAnOwedNodeExpansionSaysSo: volume db was grown to 20MiB while on
// no path here, its NodeExpandVolume owed (sent at its next publish). `volctl nomad register
// --force` (as `register --all --force` runs it, the per-volume refusal never seen) hands it
// over: Nomad is told capacity 20MiB, while the file system its allocs will mount is still the
// old size and stays so until the volume is taken back, since Nomad never sends that step. The
// command prints only "Registered volume "db" in Nomad at ...; volctl no longer claims it",
// exit 0, and the nomad-handover event says nothing of it either, where a handover forced past
// live claims gets a note (keptClaimsNote) and one forced past an owed unpublish records it in
// its event (engine handOverStored's msg; cli nomadRegisterOne). Correct behaviour: the line,
// or a note beside it, and the event say that the NodeExpandVolume to 20MiB is still owed and
// waits for the take-back, the allocs getting the file system at its old size until then.
// Found by helper review76.
func TestNomadRegisterForcedPastAnOwedNodeExpansionSaysSo(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.ExpandVolume(h.ctx, "db", 20<<20, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.NodeExpansionOwed != 20<<20 {
		t.Fatalf("precondition: node expansion owed after an expand on no path = %d (%v), want %d", v.NodeExpansionOwed, err, 20<<20)
	}
	n := newFakeNomad(t)
	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, Force: true})
	if err != nil || !handedOver(t, h) {
		t.Fatalf("forced handover: %v (marked: %v)", err, handedOver(t, h))
	}
	if said := out.String() + errOut.String(); !strings.Contains(said, "NodeExpandVolume") {
		t.Errorf("forced handover of a volume owed a NodeExpandVolume to 20MiB said only %q: want it to say the node expansion is still owed (Nomad told 20MiB, its allocs getting the file system at the old size until the take-back)", said)
	}
	events, err := h.e.Events(h.ctx, 0, engine.EventFilter{VolumeID: "db", Kind: "nomad-handover"})
	if err != nil || len(events) == 0 {
		t.Fatalf("nomad-handover event: %v, %v", events, err)
	}
	if !strings.Contains(events[0].Message, "NodeExpandVolume") {
		t.Errorf("nomad-handover event %q says nothing of the NodeExpandVolume owed it was forced past", events[0].Message)
	}
}

// A volume handed over owing both a pending ControllerExpandVolume and a NodeExpandVolume: the
// note said the node step alone (a switch), where the event names both. Found by helper
// review76 (own1).
func TestHandoverNoteNamesBothExpansionsOwed(t *testing.T) {
	n := expansionKeptNote("db", engine.VolumeInfo{NodeExpansionOwed: 20 << 20, ExpansionPending: 40 << 20})
	for _, want := range []string{"NodeExpandVolume to 20MiB", "expansion to 40MiB pending"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q does not say %q", n, want)
		}
	}
}
