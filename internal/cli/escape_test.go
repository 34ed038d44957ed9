package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// hostileText is what a plugin may put in any string it returns: an OSC window title ended
// by BEL, a clear-screen CSI, a C1 CSI (U+009B), a carriage return and a newline.
const hostileText = "\x1b]0;pwned\x07\x1b[2J\u009b31m\rX\nY"

// hostileShown is hostileText as volctl prints it in text: every control character as a
// visible escape.
const hostileShown = `\x1b]0;pwned\a\x1b[2J\u009b31m\rX\nY`

// TestPluginDataControlCharactersEscaped plays a plugin whose identity, node ID, topology,
// publish and volume context carry terminal escape sequences. The data is kept as the plugin
// gave it (it goes back to the plugin), and --json keeps it exact; but the text volctl prints
// for a person — tables, detail lines, the registration line, events, an error worded from
// that data — must show each control character as an escape: a plugin must not retitle the
// user's window, clear the screen or forge a line of output.
func TestPluginDataControlCharactersEscaped(t *testing.T) {
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.Version = "1.0" + hostileText
	cfg.Manifest = map[string]string{"m": hostileText}
	cfg.NodeID = "node" + hostileText
	cfg.PublishContext = map[string]string{"p": hostileText}
	cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "a" + hostileText}}
	mem := csitest.NewMemPlugin(cfg)
	answer := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			r.Volume.VolumeContext = map[string]string{"c" + hostileText: hostileText}
			zone := "a" + hostileText
			if strings.Contains(req.(*csipb.CreateVolumeRequest).GetName(), "elsewhere") {
				zone = "b" + hostileText // not the node's: a claim is refused naming it
			}
			r.Volume.AccessibleTopology = []*csipb.Topology{{Segments: map[string]string{"zone": zone}}}
		}
		return resp, err
	}
	socket, _ := csitest.Serve(t, csitest.WithServer(mem), csitest.WithInterceptor(answer))
	e := openEngine(t, filepath.Join(t.TempDir(), "state"))
	eng := func(context.Context) (*engine.Engine, error) { return e, nil }
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"db", "elsewhere"} {
		if _, err := e.CreateVolume(ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem",
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "a1"}); err != nil {
		t.Fatal(err)
	}

	// check: lines says whether the text may hold lines of its own (an error joining several:
	// a plugin's newline there is not escaped, its other control characters are).
	check := func(what string, lines bool, out ...fmt.Stringer) {
		t.Helper()
		shown := false
		for _, o := range out {
			s := o.String()
			if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f }); i >= 0 {
				t.Errorf("%s prints control character %q raw to the terminal:\n%q", what, s[i], s)
			}
			if !lines && strings.Contains(s, "\nY") {
				t.Errorf("%s lets a plugin's newline start a line of its own:\n%q", what, s)
			}
			shown = shown || strings.Contains(s, hostileShown)
		}
		if !shown && !lines {
			t.Errorf("%s does not show the plugin's text escaped (%s)", what, hostileShown)
		}
	}
	run := func(what string, f func(ios *iostreams.IOStreams) error) {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		if err := f(ios); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		check(what, false, out, errOut)
	}
	run("plugin register", func(ios *iostreams.IOStreams) error {
		return pluginRegisterRun(ctx, &PluginRegisterOptions{IO: ios, Engine: eng, ID: "mem", Type: "monolith", Socket: socket})
	})
	for _, id := range []string{"", "mem"} {
		run("plugin status "+id, func(ios *iostreams.IOStreams) error {
			return pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: id})
		})
		run("status "+id, func(ios *iostreams.IOStreams) error {
			return statusRun(ctx, &StatusOptions{IO: ios, Engine: eng, Now: nowFunc, MaxVolumes: 20})
		})
	}
	run("volume status db", func(ios *iostreams.IOStreams) error {
		return volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "db"})
	})
	run("events", func(ios *iostreams.IOStreams) error {
		return eventsRun(ctx, &EventsOptions{IO: ios, Engine: eng, Now: nowFunc})
	})

	// An error the engine words from the plugin's data: the topology it gave the volume.
	_, claimErr := e.Claim(ctx, engine.ClaimRequest{VolumeID: "elsewhere", Alloc: "a2"})
	if claimErr == nil || !strings.Contains(claimErr.Error(), hostileText) {
		t.Fatalf("claim of elsewhere = %v: want a refusal naming the plugin's topology, or this tests nothing", claimErr)
	}
	ios, _, _, errOut := iostreams.Test()
	f := NewFactory(ios)
	if code, want := f.Report(claimErr), ExitCode(claimErr); code != want {
		t.Errorf("exit code %d, want %d", code, want)
	}
	check("the claim's error", true, errOut)
	if !strings.Contains(errOut.String(), `\x1b]0;pwned\a\x1b[2J\u009b31m\rX`) {
		t.Errorf("the claim's error does not show the plugin's topology escaped:\n%s", errOut)
	}

	// --json is the data, exact: encoding/json escapes C0 itself, and a script gets back what
	// the plugin said.
	ios, _, out, _ := iostreams.Test()
	if err := pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "mem", Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `\u001b]0;pwned\u0007\u001b[2J`) {
		t.Errorf("plugin status --json changed the plugin's version:\n%s", out)
	}
}
