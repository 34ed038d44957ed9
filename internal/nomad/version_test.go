package nomad

import "testing"

// Which Nomad builds erase a CSI volume's secrets and mount flags when they send its event to
// an event-stream subscriber: every release before 1.11.1 (hashicorp/nomad#27176), but the
// Enterprise ones fixed the same day (1.10.7, 1.8.19 onwards in their lines); a build volctl
// cannot read is not said to.
func TestErasesSecretsOnEvents(t *testing.T) {
	for build, want := range map[string]bool{
		"1.11.0": true, "1.11.1": false, "1.11.2": false, "1.12.0": false, "2.0.0": false, "2.0.0-beta.1": false,
		"1.10.6": true, "1.10.7": true, "1.10.7+ent": false, "1.10.6+ent": true, "1.10.9+ent.fips1403": false,
		"1.9.3": true, "1.9.3+ent": true, "1.8.18+ent": true, "1.8.19+ent": false, "1.8.19": true,
		"1.11.0-rc.1": true, "1.11.1-dev": false, "0.12.0": true,
		"": false, "1.10": false, "v1.10.5": false, "1.x.5": false,
	} {
		if got := ErasesSecretsOnEvents(build); got != want {
			t.Errorf("ErasesSecretsOnEvents(%q) = %v, want %v", build, got, want)
		}
	}
}
