package engine

import (
	"testing"
)

// TestNomadReleaseEventNamesThePlugin: every event about a volume names the volume's plugin,
// so that `volctl events --plugin P` (and `--follow --plugin P`) lists what happened to P's
// volumes. The nomad-handover event did; the nomad-release event of the same volume, taken back
// from Nomad (removeMark), named no plugin, so a filter by plugin showed the volume handed to
// Nomad and never taken back. Found by helper review71.
func TestNomadReleaseEventNamesThePlugin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab("single-node-writer")))
	to := HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: "default"}
	if _, err := h.e.HandOver(h.ctx, "db", to, false, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := h.e.TakeBack(h.ctx, "db", because("deregistered from Nomad"), nil); err != nil || !r.Had {
		t.Fatalf("take back: had=%v err=%v", r.Had, err)
	}
	all, err := h.e.Events(h.ctx, 0, EventFilter{VolumeID: "db", Kind: "nomad-release"})
	if err != nil || len(all) != 1 {
		t.Fatalf("premise: want one nomad-release event of db, got %+v, %v", all, err)
	}
	byPlugin, err := h.e.Events(h.ctx, 0, EventFilter{PluginID: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	var handover, release bool
	for _, ev := range byPlugin {
		switch ev.Kind {
		case "nomad-handover":
			handover = true
		case "nomad-release":
			release = true
		}
	}
	if !handover || !release {
		t.Errorf("events --plugin mem: nomad-handover shown %v, nomad-release shown %v; want both (the release event names plugin %q)",
			handover, release, all[0].PluginID)
	}
}
