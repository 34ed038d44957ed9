package cli

import (
	"strings"
	"testing"
)

// nomad release when Nomad's volume of the ID is now another one (ours deregistered, someone
// else's registered under the same ID, with another external ID or plugin): the refusal must
// not tell the user to `nomad volume deregister` it, which would take someone else's volume
// out of Nomad (allocs and all), and must say what does work. The mark stays (the rule: only
// Nomad's 404 takes it back; --force is the user's call).
func TestNomadReleaseDoesNotAdviseDeregisteringAnotherVolume(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"external ID", func(v map[string]any) { v["ExternalID"] = "someone-elses-disk" }, `external_id "someone-elses-disk"`},
		{"plugin", func(v map[string]any) { v["PluginID"] = "ebs" }, `plugin_id "ebs"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nomadHarness(t)
			a := newFakeNomad(t)
			if _, _, err := registerIn(h, a); err != nil {
				t.Fatal(err)
			}
			a.mu.Lock()
			a.readBack = tc.edit
			a.mu.Unlock()
			_, err := runNomadRelease(h, a.client, nil)
			if !handedOver(t, h) {
				t.Fatalf("released without --force: %v", err)
			}
			if err == nil {
				t.Fatal("release: no error")
			}
			if strings.Contains(err.Error(), "nomad volume deregister") && !strings.Contains(err.Error(), "not `nomad volume deregister") {
				t.Errorf("release: %v\nadvises deregistering Nomad's volume, which is another one", err)
			}
			for _, want := range []string{"another volume", tc.want, "volctl nomad release --force db"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("release: %v\nwant it to say %q", err, want)
				}
			}
		})
	}
}
