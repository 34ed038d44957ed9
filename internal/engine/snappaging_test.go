package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin whose ListSnapshots paging repeats a next_token it gave before (a token that points
// at its own page, or two pages pointing at each other) would list forever. Its listing is not
// taken as complete at the repeat: that would mark the snapshots on the pages never reached
// "missing" while the plugin has them; nor paged through up to volctl's page bound (thousands of
// calls, each up to the short timeout). At the first repeated token the listing stops, the
// plugin's snapshots are shown from volctl's records with a warning naming the plugin, the RPC
// and the token, and none is marked missing.
func TestListSnapshotsRepeatingTokenIsNotAnEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		next func(string) string
		// calls: the ListSnapshots calls to the first page whose token was given before.
		calls int
		token string
	}{
		{"token to its own page", func(string) string { return "1" }, 2, "1"},
		{"two pages to each other", func(start string) string {
			if start == "1" {
				return "2"
			}
			return "1"
		}, 3, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.PageSize = 1 })
			for _, name := range []string{"a", "b", "c"} {
				h.snapshot(name)
			}
			h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{NextToken: tc.next})
			h.faults.ResetCounts()
			list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.faults.Calls(csi.RPCListSnapshots); got != tc.calls {
				t.Errorf("ListSnapshots sent %d times, want %d (stopped at the first repeated token)", got, tc.calls)
			}
			for _, s := range list.Snapshots {
				if s.Missing {
					t.Errorf("snapshot %q (%s) marked missing, while the plugin has it: its listing never reached its page", s.ID, s.Name)
				}
			}
			if len(list.Snapshots) != 3 {
				t.Errorf("snapshots listed = %+v, want the 3 recorded", list.Snapshots)
			}
			want := `plugin "mem": ListSnapshots: the plugin answered next_token "` + tc.token + `" a second time`
			if w := strings.Join(list.Warnings, "\n"); !strings.Contains(w, want) || !strings.Contains(w, "showing volctl's records only") {
				t.Errorf("warnings = %q, want one saying %s, showing volctl's records only", list.Warnings, want)
			}
		})
	}
}
