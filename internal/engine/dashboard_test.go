package engine

import (
	"reflect"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// The dashboard's one-transaction read must say exactly what the separate calls say, so the TUI
// can use it in their place.
func TestDashboardAgreesWithSeparateReads(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a"))
	h.create(volume("b", capab(spec.MultiNodeReaderOnly)))
	h.create(volume("c"))
	h.claim(ClaimRequest{VolumeID: "a", Alloc: "web-0"})
	h.claim(ClaimRequest{VolumeID: "b", Alloc: "web-1", ReadOnly: true})
	h.claim(ClaimRequest{VolumeID: "b", Alloc: "web-2", ReadOnly: true})

	d, err := h.e.Dashboard(h.ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	vols, err := h.e.Volumes(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := h.e.Claims(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	plugins, err := h.e.Plugins(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, err := h.e.Events(h.ctx, 3, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"volumes", d.Volumes, vols},
		{"claims", d.Claims, claims},
		{"plugins", d.Plugins, plugins},
		{"events", d.Events, events},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, c.got, c.want)
		}
	}
	if len(d.Volumes) != 3 || len(d.Claims) != 3 || len(d.Plugins) != 1 || len(d.Events) != 3 {
		t.Fatalf("counts: %d volumes, %d claims, %d plugins, %d events; want 3, 3, 1, 3",
			len(d.Volumes), len(d.Claims), len(d.Plugins), len(d.Events))
	}
	all, err := h.e.Events(h.ctx, 0, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) <= 3 || d.EventsLogged != len(all) {
		t.Errorf("events logged = %d, want the log's %d (more than the 3 read)", d.EventsLogged, len(all))
	}
	if d.Plugins[0].Volumes != 3 {
		t.Errorf("plugin volume count = %d, want 3", d.Plugins[0].Volumes)
	}
	if b := d.Volumes[1]; b.ID != "b" || b.ReadClaims != 2 || b.WriteClaims != 0 {
		t.Errorf("volume b = %+v, want 2 read claims", b)
	}
}

func TestDashboardEmpty(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	d, err := h.e.Dashboard(h.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d.Volumes == nil || d.Claims == nil || len(d.Volumes)+len(d.Claims) != 0 {
		t.Errorf("empty store: volumes %#v claims %#v, want empty non-nil slices", d.Volumes, d.Claims)
	}
}
