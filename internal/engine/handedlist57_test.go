package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A volume handed over to Nomad takes no claims here, and its status says "no: handed over to
// Nomad"; but the lists said "yes": volume ls (and --json's schedulable), the dashboard's list
// and the count status gives, each from a read that did not look at the handovers, so a
// script picking a schedulable volume from `volume ls --json` picked one every claim of
// refuses. Every read of the volumes says what volume status says.
func TestHandedOverVolumeIsListedAsNotSchedulable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.create(volume("web", capab(spec.SingleNodeWriter)))
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	if _, err := h.e.HandOver(h.ctx, "db", to, false, nil); err != nil {
		t.Fatal(err)
	}
	check := func(how string, v VolumeSummary) {
		t.Helper()
		s := v.Schedulability(nil)
		switch v.ID {
		case "db":
			if v.Schedulable || s.Why != HandedOver || !strings.Contains(s.Sentence(), to.Address) {
				t.Errorf("%s: handed-over db schedulable %v, %q (%s); want not schedulable, handed over to %s", how, v.Schedulable, s, s.Sentence(), to.Address)
			}
		case "web":
			if !v.Schedulable || !s.OK() {
				t.Errorf("%s: web schedulable %v, %q; want yes", how, v.Schedulable, s)
			}
		}
	}
	vols, err := h.e.Volumes(h.ctx)
	if err != nil || len(vols) != 2 {
		t.Fatalf("Volumes = %d volumes, %v", len(vols), err)
	}
	for _, v := range vols {
		check("the volume list", v)
		// status's count, the plugin probed healthy live.
		p := PluginInfo{ID: v.PluginID, Healthy: true, Ready: true}
		check("the volume list with its plugin probed", v.WithPluginProbed(&p))
	}
	d, err := h.e.Dashboard(h.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Volumes {
		check("the dashboard", v)
	}
	if _, err := h.e.TakeBack(h.ctx, "db", because("test"), nil); err != nil {
		t.Fatal(err)
	}
	vols, err = h.e.Volumes(h.ctx)
	if err != nil || len(vols) != 2 || !vols[0].Schedulable {
		t.Fatalf("taken back: Volumes = %+v, %v; want db schedulable again", vols, err)
	}
}
