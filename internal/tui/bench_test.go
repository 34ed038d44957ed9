package tui

import (
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// bigFixture is 10,000 volumes, each with one claim.
func bigFixture(n int) *fakeEngine {
	f := fixture()
	f.data.Volumes = make([]engine.VolumeSummary, n)
	f.data.Claims = make([]engine.ClaimInfo, n)
	for i := range n {
		id := fmt.Sprintf("vol-%05d", i)
		f.data.Volumes[i] = engine.VolumeSummary{ID: id, Namespace: "default", Name: "volume " + id, PluginID: "hostpath",
			State: "ready", Schedulable: true, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem,
			CapacityBytes: int64(i+1) << 20, WriteClaims: 1}
		f.data.Claims[i] = engine.ClaimInfo{ID: int64(i + 1), VolumeID: id, Alloc: fmt.Sprintf("web-%d", i), Mode: "write",
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem, State: "published",
			TargetPath: "/var/lib/volctl/publish/web-" + id + "/rw-file-system-single-node-writer",
			CreatedAt:  testNow.Add(-time.Duration(i) * time.Second)}
	}
	return f
}

// One frame of the volumes view with 10,000 volumes and 10,000 claims loaded: only the rows on
// screen are drawn, so a frame costs the same as with ten. Target: well under 16 ms.
func BenchmarkVolumesView10k(b *testing.B) {
	for _, p := range []struct {
		name    string
		profile termenv.Profile
	}{{"ascii", termenv.Ascii}, {"truecolor", termenv.TrueColor}} {
		b.Run(p.name, func(b *testing.B) {
			h := newHarness(b, bigFixture(10_000), Options{Renderer: FixedRenderer(p.profile)})
			h.send(tea.WindowSizeMsg{Width: 120, Height: 40})
			h.keys("pgdown", "pgdown") // somewhere in the middle
			b.ReportAllocs()
			for b.Loop() {
				_ = h.m.View()
			}
		})
	}
}

// What a refresh costs with 10,000 volumes and claims, in its two halves: formatting and
// measuring every row, in the read's command off the UI goroutine; then filtering and sorting
// them in Update, which is all a keypress waits for.
func BenchmarkRefresh10k(b *testing.B) {
	h := newHarness(b, bigFixture(10_000), Options{})
	h.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	h.keys("/", "vol-0", "enter")
	d := snapshot{Dashboard: h.fake.data}
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = buildRows(d, testNow)
		}
	})
	b.Run("update", func(b *testing.B) {
		rows := buildRows(d, testNow)
		b.ReportAllocs()
		for b.Loop() {
			h.m.setData(d, rows)
		}
	})
}
