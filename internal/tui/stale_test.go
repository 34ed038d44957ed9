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
		v := engine.VolumeInfo{VolumeSummary: f.data.Volumes[1], ExternalID: "vol-new"}
		v.CreatedAt = testNow
		f.volumes["mysql-1"] = v
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

// TestActionOnAVolumeRemadeSinceTheListWasDrawnIsRefused: the list is read every two seconds,
// and a volume deleted and created again under its ID in between (`volume delete scratch;
// volume create scratch.hcl` in another terminal) is still drawn as the old one. The question
// read which record it was about when it opened, after the key press: the new one. So D
// pressed on the old row asked about, and deleted, the new volume's storage, which nobody had
// seen in the list; F unmounted the new record's staging. The rows carry the record's
// identity (its created-at) now, and the question refuses a record other than the row's.
func TestActionOnAVolumeRemadeSinceTheListWasDrawnIsRefused(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	create := func() {
		t.Helper()
		_, err := e.CreateVolume(ctx, spec.Volume{ID: "scratch", Name: "scratch", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}})
		if err != nil {
			t.Fatalf("create scratch: %v", err)
		}
	}
	for _, tt := range []struct {
		name, open, key string // open: the view the key is pressed in, before the volume is re-made
	}{
		{"delete from the list", "", "D"},
		{"force detach from the list", "", "F"},
		{"delete from the detail", "enter", "D"},
	} {
		create()
		old, err := e.Volume(ctx, "scratch")
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, e, Options{})
		if got := h.selected(); got != "scratch" {
			t.Fatalf("%s: the row selected is %q, want scratch:\n%s", tt.name, got, h.m.View())
		}
		if tt.open != "" {
			h.keys(tt.open)
		}
		// Elsewhere, before the next refresh: deleted and created again, new storage.
		if err := e.DeleteVolume(ctx, "scratch"); err != nil {
			t.Fatal(err)
		}
		create()
		remade, err := e.Volume(ctx, "scratch")
		if err != nil {
			t.Fatal(err)
		}
		if remade.ExternalID == old.ExternalID {
			t.Fatalf("%s: the plugin gave the re-made volume the old one's ID %q", tt.name, old.ExternalID)
		}
		h.keys(tt.key)
		if h.m.dialog == nil {
			t.Fatalf("%s: no question after %s:\n%s", tt.name, tt.key, h.m.View())
		}
		h.keys("tab", "enter")
		now, err := e.Volume(ctx, "scratch")
		switch {
		case err != nil:
			t.Errorf("%s, confirmed on the row of the old scratch: the volume re-made since the list was drawn is gone: %v", tt.name, err)
		case now.ExternalID != remade.ExternalID || !now.CreatedAt.Equal(remade.CreatedAt):
			t.Errorf("%s: the re-made scratch changed: %+v, want %+v", tt.name, now, remade)
		case now.Staged != remade.Staged:
			t.Errorf("%s: the re-made scratch's staging changed", tt.name)
		}
		if st := h.m.status.text; !h.m.status.failed || !strings.Contains(st, `"scratch" was deleted and created again since the list was drawn`) || !strings.Contains(st, "nothing") {
			t.Errorf("%s confirmed on the row of the old scratch: status %q (failed %v); want it refused, saying the volume was re-made since the list was drawn and nothing was done",
				tt.name, st, h.m.status.failed)
		}
		// The next read draws the new one, and the same keys act on it.
		if h.m.failure != nil {
			h.keys("enter") // the refusal, whole in a box on a narrow screen
		}
		h.send(refreshTickMsg{})
		h.keys(tt.key, "tab", "enter")
		if h.m.status.failed || h.m.status.text == "" {
			t.Errorf("%s, after a refresh drew the new scratch: status %q (failed %v), want it done", tt.name, h.m.status.text, h.m.status.failed)
		}
		if tt.key == "D" {
			continue
		}
		if err := e.DeleteVolume(ctx, "scratch"); err != nil {
			t.Fatal(err)
		}
	}
}
