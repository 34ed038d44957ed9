package engine

import (
	"strings"
	"testing"
	"time"

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
	t.Parallel()
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

// A plugin whose ListSnapshots pages without end, slowly, each page with a fresh token (so no
// repeat stops it), held `volume snapshot list` for up to 10,000 pages, each within the short
// timeout and its retries: hours, with nothing but Ctrl-C to end it. A listing shown to the
// user is bounded in time (Config.ListTime): past it the plugin's snapshots are shown from
// volctl's records with a warning naming the plugin and the bound, and none is marked missing.
func TestListSnapshotsSlowEndlessPagingIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.PageSize = 1 })
	h.open(Config{Now: func() time.Time { return snapshotClock }, ListTime: 300 * time.Millisecond})
	h.create(volume("db"))
	for _, name := range []string{"a", "b", "c"} {
		h.snapshot(name)
	}
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{Delay: 20 * time.Millisecond, FirstPage: true,
		NextToken: func(start string) string { return start + "." }})
	type result struct {
		list SnapshotList
		err  error
	}
	done := make(chan result, 1)
	go func() {
		list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
		done <- result{list, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("snapshot list still running after 60 s, %d ListSnapshots pages in: unbounded", h.faults.Calls(csi.RPCListSnapshots))
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, s := range r.list.Snapshots {
		if s.Missing {
			t.Errorf("snapshot %q (%s) marked missing, while the plugin has it: its listing was cut short", s.ID, s.Name)
		}
	}
	if len(r.list.Snapshots) != 3 {
		t.Errorf("snapshots listed = %+v, want the 3 recorded", r.list.Snapshots)
	}
	want := `plugin "mem": the listing did not finish within 300ms`
	if w := strings.Join(r.list.Warnings, "\n"); !strings.Contains(w, want) || !strings.Contains(w, "showing volctl's records only") {
		t.Errorf("warnings = %q, want one saying %s, showing volctl's records only", r.list.Warnings, want)
	}
}
