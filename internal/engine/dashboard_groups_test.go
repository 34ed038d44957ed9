package engine

import (
	"reflect"
	"testing"
)

// The dashboard's read carries the groups too (its groups view), in the same transaction, the
// same as Groups says.
func TestDashboardHasTheGroups(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(2)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
		t.Fatal(err)
	}
	d, err := h.e.Dashboard(h.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := h.e.Groups(h.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Groups) != 1 || !reflect.DeepEqual(d.Groups, groups) {
		t.Errorf("dashboard groups %+v, want %+v", d.Groups, groups)
	}
}
