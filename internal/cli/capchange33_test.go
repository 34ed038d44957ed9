package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// TestPluginStatusSaysWhatCapabilitiesChanged: a plugin that came back with other
// capabilities is noted under the plugin table, and in its detail view, with what it lost and
// gained, when, and the command that shows the whole event; one that never changed is not.
func TestPluginStatusSaysWhatCapabilitiesChanged(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	changed := engine.PluginInfo{ID: "hp", Provider: "hostpath", CapabilityChange: &engine.CapabilityChange{
		At: now.Add(-3 * time.Minute), Lost: []string{"STAGE_UNSTAGE_VOLUME"}, Gained: []string{}}}
	steady := engine.PluginInfo{ID: "mem", Provider: "mem"}
	var table bytes.Buffer
	if err := writePluginTable(&table, []engine.PluginInfo{changed, steady}); err != nil {
		t.Fatal(err)
	}
	writeCapabilityChanges(&table, []engine.PluginInfo{changed, steady}, now)
	want := `Plugin "hp" came back with other capabilities 3m ago: lost STAGE_UNSTAGE_VOLUME; gained none (` + "`volctl events --kind plugin-capabilities`" + ` shows each change)`
	if !strings.Contains(table.String(), want) || strings.Contains(table.String(), `Plugin "mem" came back`) {
		t.Errorf("plugin table:\n%s\nwant the note %q for hp alone", table.String(), want)
	}
	var detail bytes.Buffer
	if err := writePluginDetail(&detail, changed, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail.String(), "3m ago: lost STAGE_UNSTAGE_VOLUME; gained none") {
		t.Errorf("plugin detail:\n%s\nwant its capability change", detail.String())
	}
	detail.Reset()
	if err := writePluginDetail(&detail, steady, now); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(detail.String(), "Capabilities Changed") {
		t.Errorf("plugin detail of one that never changed:\n%s", detail.String())
	}
}
