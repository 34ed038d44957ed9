package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The dashboard read the state (its volumes, their external IDs, the events that word them) in
// one transaction and the secrets to scrub it with in another (tui's redacted, after
// Engine.Dashboard). Another process deleting the volume between the two took the secret out
// of the state and out of the log in one commit: the dashboard's read held it raw, the second
// read no longer knew it, and the dashboard showed the secret a plugin echoed for a refresh,
// as `volctl events` did (TestEventsReadBeforeAnotherProcessDeletesTheVolumeShowNoSecret). The
// dashboard's read is now scrubbed with the secrets that same read found.
func TestDashboardReadBeforeAnotherProcessDeletesTheVolumeShowsNoSecret(t *testing.T) {
	const secret = "dashrace-s3cret-SENTINEL-6501"
	ctx := context.Background()
	e, _ := echoingSecretNode(t, secret, false)
	other := openEngine(t, e.StateDir()) // the deleting process
	d, err := e.Dashboard(ctx, 50)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.DeleteVolume(ctx, "db"); err != nil {
		t.Fatalf("delete by the other process: %v", err)
	}
	// What the dashboard does next with what it read (tui's redacted).
	if err := e.RedactValue(ctx, &d); err != nil {
		t.Fatal(err)
	}
	shown, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(shown), secret) {
		t.Errorf("the dashboard's read, scrubbed after another process deleted the volume, shows the secret the plugin echoed:\n%s", shown)
	}
	if !strings.Contains(string(shown), "[REDACTED]") {
		t.Errorf("the dashboard's read shows nothing of the volume's external ID or its events: the test tests nothing:\n%s", shown)
	}
}

// TestVolumeStatusReadBeforeAnotherProcessDeletesTheVolumeShowsNoSecret is the dashboard's
// case above for `volume status ID` and the dashboard's volume detail: each read the volume
// (Engine.Volume), then scrubbed it with a read of the secrets of its own (redactOutput, tui's
// redacted), and a volume another process deleted in between had its plugin's echo of its
// secret (here its external ID) shown whole. Both read it with Engine.VolumeShown now, scrubbed
// with the secrets its own snapshot held; its Key stays the ID as stored. Found by helper
// review67 (the dashboard's detail: TestVolumeDetailReadBeforeAnotherProcessDeletesItShowsNoSecret).
func TestVolumeStatusReadBeforeAnotherProcessDeletesTheVolumeShowsNoSecret(t *testing.T) {
	const secret = "statusrace-s3cret-SENTINEL-6701"
	ctx := context.Background()
	e, _ := echoingSecretNode(t, secret, false)
	other := openEngine(t, e.StateDir())
	info, err := e.VolumeShown(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.DeleteVolume(ctx, "db"); err != nil {
		t.Fatalf("delete by the other process: %v", err)
	}
	shown, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(shown), secret) || !strings.Contains(info.ExternalID, "[REDACTED]") {
		t.Errorf("volume status' read, another process deleting the volume after it, shows:\n%s", shown)
	}
	if info.Key() != "db" || info.ID != "db" {
		t.Errorf("the read's Key %q and ID %q, want db", info.Key(), info.ID)
	}
}
