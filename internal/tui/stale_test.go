package tui

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// TestDetailOfAVolumeGoneNeverShowsAnother: the engine finds a volume by its ID or by an
// unambiguous prefix of it (`volume status db` is `db-replica`'s when only it starts so). The
// detail of volume "db", open while "db" is deleted elsewhere, re-read it by its ID on the next
// refresh and got "db-replica": shown under "Volume db", and D in it asked to delete db-replica,
// the volume the user never opened. The detail now says "db" is gone, and acts on nothing.
func TestDetailOfAVolumeGoneNeverShowsAnother(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	for _, id := range []string{"db", "db-replica"} {
		_, err := e.CreateVolume(ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}})
		if err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}

	h := newHarness(t, e, Options{})
	h.keys("enter") // the detail of "db", the first row
	if d := h.m.detail; d == nil || d.volume == nil || d.volume.ID != "db" {
		t.Fatalf("the detail of db is not open:\n%s", h.m.View())
	}
	if err := e.DeleteVolume(ctx, "db"); err != nil { // elsewhere: another terminal, the agent
		t.Fatal(err)
	}
	h.send(refreshTickMsg{})
	out := h.m.View()
	if d := h.m.detail; d != nil && d.volume != nil && d.volume.ID != "db" {
		t.Errorf("the detail of volume db, deleted, shows volume %q in its place:\n%s", d.volume.ID, out)
	}
	if !strings.Contains(out, `volume "db" no longer exists`) {
		t.Errorf("the detail of a deleted volume does not say it is gone:\n%s", out)
	}
	h.keys("D")
	if h.m.dialog != nil {
		t.Errorf("D in the detail of a deleted volume asks %q", h.m.dialog.a.question())
	}
}

// TestConfirmedActionOnAChangedVolumeIsRefused: a confirmation stays open while the dashboard
// refreshes under it, and the engine acts on the volume as it is when the action runs. A forced
// detach confirmed for the claims it named (web[1]'s) released a claim made since, unnamed,
// unmounting its target without asking the plugin; a release confirmed for one claim released
// the claim its alloc made again since. Each now checks the volume's claims as the action
// starts, and one that is not what the question said is refused, naming what changed: nothing
// is done, and the next read shows the volume as it is.
func TestConfirmedActionOnAChangedVolumeIsRefused(t *testing.T) {
	claimedSince := func(f *fakeEngine) {
		c := f.data.Claims[1] // web[1]'s on mysql-1
		c.ID, c.Alloc, c.Group = 50, "batch-7", ""
		f.data.Claims = append(f.data.Claims, c)
	}
	claimedAgain := func(f *fakeEngine) {
		f.data.Claims[0].ID = 60 // web[0] released mysql-0 and claimed it again
	}
	recreated := func(f *fakeEngine) {
		v := f.volumes["scratch"]
		v.ExternalID, v.CreatedAt = "vol-new", testNow
		f.volumes["scratch"] = v
	}
	recreatedMysql1 := func(f *fakeEngine) {
		f.volumes["mysql-1"] = engine.VolumeInfo{VolumeSummary: f.data.Volumes[1], ExternalID: "vol-new", CreatedAt: testNow}
	}
	for _, tt := range []struct {
		name, refused string
		keys          []string
		change        func(*fakeEngine)
		calls         []string // when nothing changed
	}{
		{"force detach", `"batch-7"`, []string{"down", "F"}, claimedSince, []string{"Detach(mysql-1, true)"}},
		{"detach", `"batch-7"`, []string{"down", "d"}, claimedSince, []string{"Detach(mysql-1, false)"}},
		{"force detach from the detail", `"batch-7"`, []string{"down", "enter", "F"}, claimedSince, []string{"Detach(mysql-1, true)"}},
		{"release", `claim 60`, []string{"2", "x"}, claimedAgain, []string{"Release(mysql-0, web[0])"}},
		// Deleted and created again under the same ID, with new storage: the new one was never
		// asked about. A force-detach of a volume without claims has no claim to tell them apart.
		{"delete", `"scratch" was deleted and created again`, []string{"down", "down", "down", "D"}, recreated, []string{"DeleteVolume(scratch)"}},
		{"delete from the detail", `"scratch" was deleted and created again`, []string{"down", "down", "down", "enter", "D"}, recreated, []string{"DeleteVolume(scratch)"}},
		{"force detach without claims", `"scratch" was deleted and created again`, []string{"down", "down", "down", "F"}, recreated, []string{"Detach(scratch, true)"}},
		{"detach", `"mysql-1" was deleted and created again`, []string{"down", "d"}, recreatedMysql1, []string{"Detach(mysql-1, false)"}},
	} {
		for _, changed := range []bool{true, false} {
			h := afterKeys(t, tt.keys...)
			if h.m.dialog == nil {
				t.Fatalf("%s: no dialog after %v", tt.name, tt.keys)
			}
			if changed {
				h.fake.mu.Lock()
				tt.change(h.fake)
				h.fake.mu.Unlock()
				h.send(refreshTickMsg{}) // the dashboard refreshes under the open dialog
			}
			h.keys("tab", "enter")
			got := actionCalls(h.fake.Calls())
			switch {
			case !changed && !slices.Equal(got, tt.calls):
				t.Errorf("%s, nothing changed: engine calls %v, want %v (status %q)", tt.name, got, tt.calls, h.m.status.text)
			case changed && len(got) > 0:
				t.Errorf("%s confirmed, then the volume changed: the engine was called (%v); want it refused", tt.name, got)
			case changed && (!h.m.status.failed || !strings.Contains(h.m.status.text, tt.refused) || !strings.Contains(h.m.status.text, "nothing")):
				t.Errorf("%s refused with %q (failed %v); want an error naming %s and saying nothing was done", tt.name, h.m.status.text, h.m.status.failed, tt.refused)
			}
		}
	}
}
