package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/engine"
)

// A volume's detail shows its claims, errors included, before the long field list: at 80x24
// they are on the first screen, without scrolling.
func TestVolumeDetailShowsClaimsFirst(t *testing.T) {
	fake := fixture()
	v := fake.volumes["mysql-0"]
	v.Claims = append(v.Claims, engine.ClaimInfo{ID: 7, VolumeID: "mysql-0", Alloc: "backup-7", Mode: "read",
		State: "node-staged", NeedsReconcile: true, LastRPC: "NodePublishVolume", LastCode: "Unavailable",
		LastError: "connection refused by the plugin's node service", CreatedAt: ago(2 * time.Minute)})
	fake.volumes["mysql-0"] = v
	h := newHarness(t, fake, Options{}) // 80x24
	h.keys("enter")
	out := h.m.View()
	for _, want := range []string{"Claims", "web[0]", "backup-7", "node-staged (needs reconcile)", "NodePublishVolume:", "refused by the plugin's", "node service"} {
		if !strings.Contains(out, want) {
			t.Errorf("the first screen of the volume detail lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "Claims") > strings.Index(out, "External ID") {
		t.Errorf("the claims come after the field list:\n%s", out)
	}
}

// A volume's detail says which node it is recorded attached to, and whether a
// ControllerUnpublishVolume is owed there: with no claim holding the attachment (a forced
// detach could not send it), reconcile sends it.
func TestVolumeDetailShowsAttachedTo(t *testing.T) {
	vol := engine.VolumeSummary{ID: "db", PluginID: "ebs"}
	claim := engine.ClaimInfo{ID: 1, VolumeID: "db", Alloc: "web-0", Mode: "write", State: "published", CreatedAt: detailNow}
	checkVolumeDetails(t, []detailCase{
		{"not attached", engine.VolumeInfo{VolumeSummary: vol},
			[]string{"Attached To       = <none>"}, []string{"Unpublish Owed"}},
		{"attached, held by a claim", engine.VolumeInfo{VolumeSummary: vol, AttachedTo: "node-1", Claims: []engine.ClaimInfo{claim}},
			[]string{"Attached To       = node-1", "Unpublish Owed    = no"}, []string{"no claim holds"}},
		// Said under the claims, on the first screen, and in the field list.
		{"attached with no claim", engine.VolumeInfo{VolumeSummary: vol, AttachedTo: "node-1"},
			[]string{`  none
  no claim holds its attachment to node "node-1": ControllerUnpublishVolume is owed (a forced detach could not send it, or the plugin lost PUBLISH_UNPUBLISH_VOLUME). Run ` + "`volctl reconcile`" + ` once plugin
  "ebs" answers (it sends it)`,
				"Attached To       = node-1", "Unpublish Owed    = yes"}, nil},
		// Kept on purpose while the volume is Nomad's: what sends it is the take-back.
		// The words are the engine's (UnpublishWaits), as `volume status` prints them.
		{"attached with no local claim, handed over to Nomad", engine.VolumeInfo{VolumeSummary: vol, AttachedTo: "node-1",
			Handover:       &engine.HandoverInfo{VolumeID: "db", Address: "http://127.0.0.1:4646"},
			UnpublishWaits: "The ControllerUnpublishVolume owed waits for the volume to be taken back from Nomad at http://127.0.0.1:4646 (`volctl nomad release db`), then `volctl reconcile` sends it"},
			[]string{"no local claim holds its attachment to node \"node-1\": the ControllerUnpublishVolume owed waits for the volume to be taken back from Nomad at http://127.0.0.1:4646 (`volctl nomad release db`)",
				"Unpublish Owed    = yes"}, []string{"a forced detach could not send it"}},
	})
}

// A volume whose staging path is still mounted with no staging recorded there (a plugin answered
// NodeUnstageVolume OK and left its mount: engine.VolumeInfo.StagingLeft) says so beside
// "Staged = no", naming the path and what finishes it; a volume staged, or unstaged with nothing
// left, shows no such row (`volume status` says the same: TestVolumeStatusNamesAStagingLeftMounted).
func TestVolumeDetailNamesAStagingLeftMounted(t *testing.T) {
	vol := engine.VolumeSummary{ID: "db", PluginID: "hp"}
	const path = "/var/lib/volctl/staging/hp/db"
	checkVolumeDetails(t, []detailCase{
		{"left mounted", engine.VolumeInfo{VolumeSummary: vol, StagingLeft: path},
			[]string{"Staged            = no", "Still Mounted     = " + path + " (no staging recorded there: see the claims' errors; `volctl reconcile`)"}, nil},
		{"staged", engine.VolumeInfo{VolumeSummary: vol, Staged: true}, []string{"Staged            = yes"}, []string{"Still Mounted"}},
		{"unstaged, nothing left", engine.VolumeInfo{VolumeSummary: vol}, []string{"Staged            = no"}, []string{"Still Mounted"}},
	})
}

// A volume owed a NodeExpandVolume, or whose ControllerExpandVolume answer was lost, says so in
// its detail, with what the node's expansion waits for, as `volume status` does; a volume owed
// neither shows no such row. Before, the dashboard showed neither.
func TestVolumeDetailShowsExpansionsOwed(t *testing.T) {
	vol := engine.VolumeSummary{ID: "db", PluginID: "hp"}
	checkVolumeDetails(t, []detailCase{
		{"node expansion owed", engine.VolumeInfo{VolumeSummary: vol, NodeExpansionOwed: 4 << 20, NodeExpansionWaits: "the volume is on no path here: its next publish sends it"},
			[]string{"Node Expand Owed  = to 4.0 MiB: the volume is on no path here: its next publish sends it"}, []string{"Expansion Pending"}},
		{"controller expansion pending", engine.VolumeInfo{VolumeSummary: vol, ExpansionPending: 8 << 20},
			[]string{"Expansion Pending = to 8.0 MiB: ControllerExpandVolume was sent and its answer not recorded"}, []string{"Node Expand Owed"}},
		{"neither", engine.VolumeInfo{VolumeSummary: vol}, nil, []string{"Node Expand Owed", "Expansion Pending"}},
	})
}

// A volume whose storage another record here names shows them, as `volume status` does (its
// Same Storage row): the volume's own claims are none, and a claim of it is refused while the
// other holds the storage.
func TestVolumeDetailShowsTheSameStorageRecordedAgain(t *testing.T) {
	vol := engine.VolumeSummary{ID: "db2", PluginID: "hp2"}
	checkVolumeDetails(t, []detailCase{
		{"recorded twice", engine.VolumeInfo{VolumeSummary: vol, SameStorage: []string{"db (plugin hp)"}},
			[]string{"Same Storage", "db (plugin hp) records this storage too"}, nil},
		{"recorded once", engine.VolumeInfo{VolumeSummary: vol}, nil, []string{"Same Storage"}},
	})
}

// detailCase is a volume's detail that must hold each of want and none of lack.
type detailCase struct {
	name       string
	v          engine.VolumeInfo
	want, lack []string
}

// detailNow is the time checkVolumeDetails draws at.
var detailNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// checkVolumeDetails draws each case's volume detail (no colour, 200 columns, at detailNow)
// and checks it (detailHasAndLacks).
func checkVolumeDetails(t *testing.T, cases []detailCase) {
	t.Helper()
	s := NewStyles(FixedRenderer(termenv.Ascii))
	for _, tt := range cases {
		detailHasAndLacks(t, tt.name, volumeDetail(s, tt.v, detailNow, 200), tt.want, tt.lack)
	}
}

// detailHasAndLacks fails the test unless the detail out holds each of want and none of lack.
func detailHasAndLacks(t *testing.T, name, out string, want, lack []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s: the detail lacks %q:\n%s", name, w, out)
		}
	}
	for _, l := range lack {
		if strings.Contains(out, l) {
			t.Errorf("%s: the detail shows %q:\n%s", name, l, out)
		}
	}
}

// In a detail, an empty claims, bind mounts or allocs section says none; a full one is a
// table under its header.
func TestDetailSectionsSayNoneWhenEmpty(t *testing.T) {
	s := NewStyles(FixedRenderer(termenv.Ascii))
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	claim := engine.ClaimInfo{ID: 1, VolumeID: "db", Alloc: "web-0", Mode: "write", State: "published", CreatedAt: now,
		Binds: []engine.Bind{{Destination: "/data"}}}
	for _, tt := range []struct {
		name, out, section, next string
	}{
		{"volume without claims", volumeDetail(s, engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db"}}, now, 100), "Claims", "none"},
		{"volume with a claim", volumeDetail(s, engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db"}, Claims: []engine.ClaimInfo{claim}}, now, 100), "Claims", "ALLOC"},
		{"claim without binds", claimDetail(s, engine.ClaimInfo{ID: 1}, now, 100), "Bind Mounts", "none"},
		{"claim with a bind", claimDetail(s, claim, now, 100), "Bind Mounts", "DESTINATION"},
		{"group without allocs", groupDetail(s, engine.GroupInfo{Name: "web"}, 100), "Allocs", "none"},
		{"group with an alloc", groupDetail(s, engine.GroupInfo{Name: "web", Allocs: []engine.AllocInfo{{Name: "web[0]"}}}, 100), "Allocs", "ALLOC"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines := strings.Split(tt.out, "\n")
			i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), tt.section) })
			if i < 0 || i+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), tt.next) {
				t.Errorf("want %q under the %s section:\n%s", tt.next, tt.section, tt.out)
			}
		})
	}
}

// A group's detail says that the claims of an alloc the group no longer has (stopped, or past
// its count), which a stop or scale-down killed before it released them leaves, are left for
// reconcile; an alloc the running group has says nothing so.
func TestGroupDetailSaysClaimsOfAnAllocNoLongerTheGroupsAreLeftForReconcile(t *testing.T) {
	s := NewStyles(FixedRenderer(termenv.Ascii))
	held := []engine.ClaimInfo{{ID: 1, VolumeID: "db", Alloc: "web[0]", Mode: "write", State: "published"}}
	for _, tt := range []struct {
		name  string
		g     engine.GroupInfo
		wants bool
	}{
		{"stopped", engine.GroupInfo{Name: "web", State: "stopped", Count: 1, Allocs: []engine.AllocInfo{{Name: "web[0]", Index: 0, Claims: held}}}, true},
		{"past its count", engine.GroupInfo{Name: "web", State: "running", Count: 1, Allocs: []engine.AllocInfo{{Name: "web[1]", Index: 1, Claims: held}}}, true},
		{"running", engine.GroupInfo{Name: "web", State: "running", Count: 1, Allocs: []engine.AllocInfo{{Name: "web[0]", Index: 0, Claims: held}}}, false},
	} {
		out := groupDetail(s, tt.g, 200)
		if got := strings.Contains(out, "`volctl reconcile` to release"); got != tt.wants {
			t.Errorf("%s: the detail says the claims are left for reconcile: %v, want %v:\n%s", tt.name, got, tt.wants, out)
		}
	}
}
