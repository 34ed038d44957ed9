package engine

import (
	"slices"
	"testing"

	"github.com/moby/sys/mountinfo"
)

// The table lists mounts in the order made, and a mount moved over a path (mount --move) keeps
// its place: taken as the stack, a cover moved over a target read as below what it covers, and a
// table-read topmost was the covered mount. stacked orders the mounts at one point by their
// parents, the bottom first. Found by helper review76 (own5).
func TestStackedOrdersMountsAtAPointByTheirParents(t *testing.T) {
	m := func(id, parent int) *mountinfo.Info { return &mountinfo.Info{ID: id, Parent: parent, Mountpoint: "/t"} }
	ids := func(ms []*mountinfo.Info) []int {
		var out []int
		for _, x := range ms {
			out = append(out, x.ID)
		}
		return out
	}
	for _, c := range []struct {
		in   []*mountinfo.Info
		want []int
	}{
		{[]*mountinfo.Info{m(10, 1), m(11, 10)}, []int{10, 11}},
		{[]*mountinfo.Info{m(30, 20), m(20, 1)}, []int{20, 30}},                // moved over: listed first
		{[]*mountinfo.Info{m(40, 22), m(21, 1), m(22, 21)}, []int{21, 22, 40}}, // moved over a stack of two
		{[]*mountinfo.Info{m(5, 1), m(7, 99)}, []int{5, 7}},                    // one the chain does not reach: after
	} {
		if got := ids(stacked(c.in)); !slices.Equal(got, c.want) {
			t.Errorf("stacked(%v) = %v, want %v", ids(c.in), got, c.want)
		}
	}
}
