package tui

import (
	"testing"

	"github.com/volctl/volctl/internal/engine"
)

// TestDashboardVolumeDetailShowsASizeShortOfItsUnitExactly: an expansion that fell 4 KiB short
// of 2 GiB left the volume at 2147479552 bytes; `volume status` shows it exactly ("2.0 GiB
// (2147479552 bytes)"), but the dashboard's detail showed "2.0 GiB", the size asked, and the
// same of an owed node expansion or a pending one (the status review's lead). Now both faces
// word sizes alike (display.BytesExactly); a size of a whole unit stays as it was.
func TestDashboardVolumeDetailShowsASizeShortOfItsUnitExactly(t *testing.T) {
	const short = 2<<30 - 4<<10
	vol := engine.VolumeSummary{ID: "db", PluginID: "ebs", CapacityBytes: short}
	checkVolumeDetails(t, []detailCase{
		{"short of its unit", engine.VolumeInfo{VolumeSummary: vol, NodeExpansionOwed: short, ExpansionPending: short},
			[]string{"Capacity          = 2.0 GiB (2147479552 bytes)", "Node Expand Owed  = to 2.0 GiB (2147479552 bytes)", "Expansion Pending = to 2.0 GiB (2147479552 bytes)"}, nil},
		{"a whole unit", engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", PluginID: "ebs", CapacityBytes: 2 << 30}},
			[]string{"Capacity          = 2.0 GiB"}, []string{"bytes)"}},
	})
}
