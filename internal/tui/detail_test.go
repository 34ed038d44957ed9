package tui

import (
	"strings"
	"testing"
	"time"

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
