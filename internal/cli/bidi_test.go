package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// bidiText holds Unicode's bidirectional overrides, embeddings and isolates (RLO, PDF, RLI,
// PDI): printed raw, a terminal that does bidi lays the rest of the line out right to left, so
// a plugin's version can make a table row, or volctl's own words after it, read as something
// else ("Trojan Source", CVE-2021-42574).
// It ends with the characters that show as nothing (a zero width space, a word joiner, a byte
// order mark, a soft hyphen): raw, a node ID "node-1.0\u200b" reads as "node-1.0".
const bidiText = "1.0\u202edeliaf\u202c\u2067x\u2069\u202a\u202b\u202d\u2066\u2068\u200b\u2060\ufeff\u00ad"

// TestPluginDataBidiControlsEscaped: what volctl prints for a person from a plugin's strings
// shows each bidi control, and each character that shows as nothing, as an escape, as it shows
// control characters.
func TestPluginDataBidiControlsEscaped(t *testing.T) {
	ctx := context.Background()
	mem := csitest.NewMemPlugin(echoingMemConfig(bidiText))
	socket, e, eng := serveMem(t, mem)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	isBidi := func(r rune) bool {
		return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || strings.ContainsRune("\u200b\u2060\ufeff\u00ad", r)
	}
	check := func(what string, out ...fmt.Stringer) {
		t.Helper()
		for _, o := range out {
			if s := o.String(); strings.ContainsFunc(s, isBidi) {
				t.Errorf("%s prints a bidi control or an invisible character raw to the terminal:\n%+q", what, s)
			}
		}
	}
	run := func(what string, f func(ios *iostreams.IOStreams) error) {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		if err := f(ios); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		check(what, out, errOut)
		if !strings.Contains(out.String()+errOut.String(), `1.0\u202edeliaf\u202c`) {
			t.Errorf("%s does not show the plugin's version escaped:\n%s", what, out)
		}
	}
	run("plugin register", func(ios *iostreams.IOStreams) error {
		return pluginRegisterRun(ctx, &PluginRegisterOptions{IO: ios, Engine: eng, ID: "mem", Type: "monolith", Socket: socket})
	})
	run("plugin status", func(ios *iostreams.IOStreams) error {
		return pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc})
	})
	run("plugin status mem", func(ios *iostreams.IOStreams) error {
		return pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "mem"})
	})
	run("events", func(ios *iostreams.IOStreams) error {
		return eventsRun(ctx, &EventsOptions{IO: ios, Engine: eng, Now: nowFunc})
	})
	err := fmt.Errorf("plugin %q answered %s: %w", "mem", bidiText, engine.ErrConflict)
	ios, _, _, errOut := iostreams.Test()
	NewFactory(ios).Report(err)
	check("an error holding plugin text", errOut)
}
