package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// terminalText is what a plugin may put in a string that JSON leaves raw: a C1 CSI (U+009B,
// which a terminal reads as ESC [), DEL and another C1 control, and the line and paragraph
// separators (U+2028, U+2029), which some readers take for newlines.
const terminalText = "\u009b31m\u007f\u0085\u2028\u2029end"

// TestJSONOutputEscapesC1 plays a plugin whose node ID, version and contexts carry C1 controls
// and U+2028/2029. encoding/json leaves C1 raw, so `--json` printed to a terminal would send it
// an escape sequence. Every JSON text volctl prints — --json (whole, streamed and one event a
// line), --jq results that are not bare strings, -t's json function — must show them as \u
// escapes, and still decode to exactly what the plugin said.
func TestJSONOutputEscapesC1(t *testing.T) {
	ctx := context.Background()
	mem := csitest.NewMountingMemPlugin(t, echoingMemConfig(terminalText))
	answer := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			r.Volume.VolumeContext = map[string]string{"c": terminalText}
		}
		return resp, err
	}
	_, e, eng := serveMem(t, mem, csitest.WithInterceptor(answer))
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db" + terminalText, Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "a1"}); err != nil {
		t.Fatal(err)
	}
	check := func(what, out string, lines bool) {
		t.Helper()
		if i := strings.IndexFunc(out, func(r rune) bool { return r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 }); i >= 0 {
			t.Errorf("%s prints %U raw:\n%q", what, []rune(out[i:])[0], out)
		}
		if !strings.Contains(out, `\u009b31m\u007f\u0085\u2028\u2029end`) {
			t.Errorf("%s does not show the plugin's text escaped:\n%s", what, out)
		}
		docs := []string{out}
		if lines {
			docs = strings.Split(strings.TrimSpace(out), "\n")
		}
		decoded := false // some document holds the plugin's text, exact, once decoded
		for _, d := range docs {
			var v any
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				t.Errorf("%s is not JSON: %v\n%s", what, err, d)
				continue
			}
			b, _ := json.Marshal(v) // encoding/json writes C1 raw: the decoded text shows
			decoded = decoded || strings.Contains(string(b), "\u009b31m\u007f\u0085")
		}
		if !decoded {
			t.Errorf("%s does not decode to the plugin's text", what)
		}
	}
	for _, c := range []struct {
		what  string
		x     exportFlags
		lines bool
		run   func(ios *iostreams.IOStreams, x exportFlags) error
	}{
		{"plugin status --json", exportFlags{JSON: true}, false, func(ios *iostreams.IOStreams, x exportFlags) error {
			return pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "mem", Exporter: x})
		}},
		{"volume status db --json", exportFlags{JSON: true}, false, func(ios *iostreams.IOStreams, x exportFlags) error {
			return volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "db", Exporter: x})
		}},
		{"volume status --json", exportFlags{JSON: true}, false, func(ios *iostreams.IOStreams, x exportFlags) error {
			return volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, Exporter: x})
		}},
		{"volume status db --jq .", exportFlags{JQ: "."}, true, func(ios *iostreams.IOStreams, x exportFlags) error {
			return volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "db", Exporter: x})
		}},
		{"volume status db -t json", exportFlags{Template: "{{json .}}\n"}, true, func(ios *iostreams.IOStreams, x exportFlags) error {
			return volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "db", Exporter: x})
		}},
		{"plugin status --jq .[]", exportFlags{JQ: ".[]"}, true, func(ios *iostreams.IOStreams, x exportFlags) error {
			return pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc, Exporter: x})
		}},
	} {
		ios, _, out, _ := iostreams.Test()
		if err := c.run(ios, c.x); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		check(c.what, out.String(), c.lines)
	}
}
