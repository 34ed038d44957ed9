package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/volctl/volctl/internal/engine"
)

// TestStaleRecordReadOfACancelledQuestionIsNotTakenByTheNext: a question's record read
// (readRecord) that answered after its question was cancelled was taken by the next question on
// the same volume (Update's recordMsg case matched by volume alone). The
// volume was deleted and created again in between and the list redrawn: the user asks about
// the volume as drawn now, the second question's own read said the same, and yet the action was
// refused with "deleted and created again since the list was drawn", naming the old record's time.
// Found by helper review70.
func TestStaleRecordReadOfACancelledQuestionIsNotTakenByTheNext(t *testing.T) {
	fake := fixture()
	t1, t2 := ago(2*time.Hour), ago(time.Minute)
	setRecord := func(ext string, at time.Time) {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		i := slices.IndexFunc(fake.data.Volumes, func(v engine.VolumeSummary) bool { return v.ID == "scratch" })
		fake.data.Volumes[i].CreatedAt = at
		v := fake.volumes["scratch"]
		v.VolumeSummary, v.ExternalID = fake.data.Volumes[i], ext
		fake.volumes["scratch"] = v
	}
	setRecord("ext-old", t1)
	h := newHarness(t, fake, Options{})
	h.keys("down", "down", "down")
	if h.selected() != "scratch" {
		t.Fatalf("selected %q, want scratch", h.selected())
	}
	// D: the question opens, its record read goes out (slow: a busy store) and is answered later.
	_, first := h.m.Update(keyMsg("D"))
	if h.m.dialog == nil || first == nil {
		t.Fatal("no question or no record read after D")
	}
	staleMsg := first() // the old record, read now, delivered late
	h.keys("esc")       // cancelled
	// Elsewhere: scratch deleted and created again; the next refresh draws the new one.
	setRecord("ext-new", t2)
	h.keys("r")
	_, second := h.m.Update(keyMsg("D"))
	if h.m.dialog == nil || second == nil {
		t.Fatal("no second question")
	}
	freshMsg := second()
	h.send(staleMsg) // the cancelled question's read lands first
	h.send(freshMsg)
	h.keys("tab", "enter")
	if !slices.Contains(fake.Calls(), "DeleteVolume(scratch)") {
		t.Errorf("the delete confirmed on the volume as drawn, and as its own question read it, was refused:\n  status: %s\n  calls: %v",
			h.m.status.text, fake.Calls())
	}
}

// TestClaimMountFlagsAskingForSuidAreShown: a claim whose own mount flags ask for suid or dev (engine.ClaimInfo.MountAllows) mounts the
// volume so for its alloc. volume status says it ("Claim Mount Flags: alloc web-0 asks for suid,
// dev"); the dashboard's claim detail and volume detail said it nowhere, and the volume detail's
// Mount Options line, with no "asking for", read as if nothing did.
// Found by helper review70.
func TestClaimMountFlagsAskingForSuidAreShown(t *testing.T) {
	fake := fixture()
	for i := range fake.data.Claims {
		if fake.data.Claims[i].VolumeID == "mysql-0" {
			fake.data.Claims[i].MountAllows = []string{"suid", "dev"}
		}
	}
	h := newHarness(t, fake, Options{})
	h.send(tea.WindowSizeMsg{Width: 120, Height: 60})
	h.keys("enter") // mysql-0's detail
	vol := h.m.View()
	h.keys("esc", "2", "enter") // the claims view: web[0]'s claim on mysql-0, the first row
	claim := h.m.View()
	if !strings.Contains(claim, "mysql-0") {
		t.Fatalf("not the claim of mysql-0:\n%s", claim)
	}
	if !strings.Contains(claim, "suid") {
		t.Errorf("the claim detail does not say its mount flags ask for suid and dev:\n%s", claim)
	}
	if !strings.Contains(vol, "suid") {
		t.Errorf("the volume detail does not say its claim's mount flags ask for suid and dev:\n%s", vol)
	}
}
