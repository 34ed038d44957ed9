package metrics

import (
	"testing"
	"time"
)

// agent37: a plugin ID is the only label value of the agent's own series that comes from outside
// volctl (the rpc and code labels are volctl's names; a driver's name is no label). One holding
// what the text format escapes, or bytes that are not UTF-8, or a line that reads as a sample,
// stays one label value of one series: every family still parses, and reads the ID back.
func TestHostilePluginIDKeepsTheExpositionParsable(t *testing.T) {
	ids := []string{
		"hp\"} 1\nvolctl_agent_ready 0\n#",
		`back\slash\n`,
		"cr\rtab\tnul\x00",
		"bad\xffutf8",
	}
	m := New()
	for _, id := range ids {
		m.PluginProbed(id, true, true, time.Millisecond)
		m.PluginRestarted(id, "exited")
		m.ObserveRPC(id, "Probe", "OK", time.Millisecond)
	}
	m.Ready()
	fams := gather(t, m) // fails the test on text the parser refuses
	if v, ok := value(fams, "volctl_agent_ready", nil); !ok || v != 1 {
		t.Errorf("volctl_agent_ready = %v (%v), want 1: a label value wrote a sample of its own", v, ok)
	}
	for _, name := range []string{"volctl_plugin_healthy", "volctl_plugin_restarts_total", "volctl_csi_rpcs_total"} {
		if n := len(fams[name].GetMetric()); n != len(ids) {
			t.Errorf("%s has %d series, want one per plugin ID (%d)", name, n, len(ids))
		}
	}
	for _, id := range ids[:3] { // valid UTF-8: read back as written
		if _, ok := value(fams, "volctl_plugin_healthy", map[string]string{"plugin": id}); !ok {
			t.Errorf("no volctl_plugin_healthy series reads back plugin %q", id)
		}
	}
}
