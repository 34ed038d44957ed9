package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// A log attribute that is a list of strings (the restore's "targets": paths under the state
// dir, which the user names) was written by the JSON log through encoding/json element by
// element: a C1 control (U+009B, a terminal's CSI) or a bidi override in one reached whoever
// tails the log raw, and a word of 5,000 bytes was logged whole, where a string attribute's are
// escaped and cut (jsonLogOptions, cutLongWords). Each string of a list is treated as a string
// attribute is now, in both formats.
func TestJSONLogEscapesAndCutsEachStringOfAList(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, json := range []bool{true, false} {
		var buf bytes.Buffer
		slog.New(logHandler(&buf, json, slog.LevelInfo)).Warn("restored", "targets", []string{"/ok", "/state\u009b2J\u202eevil", "/" + long})
		line := buf.String()
		if strings.ContainsAny(line, "\u009b\u202e") {
			t.Errorf("json=%v: the log line holds a raw C1 control or bidi override from a list attribute:\n%q", json, line)
		}
		if strings.Contains(line, long) {
			t.Errorf("json=%v: the log line holds a list's word of %d bytes whole", json, len(long))
		}
		if !strings.Contains(line, "/ok") {
			t.Errorf("json=%v: the list's plain element is lost:\n%q", json, line)
		}
	}
	var buf bytes.Buffer
	slog.New(logHandler(&buf, true, slog.LevelInfo)).Warn("restored", "targets", []string{"/a", "/b"})
	var rec struct{ Targets []string }
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || len(rec.Targets) != 2 || rec.Targets[1] != "/b" {
		t.Errorf("a list with nothing to escape is written as %q (%v), want the list as it was", buf.String(), err)
	}
}
