package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// shownEchoes are the ways a plugin writes a secret into its data so that it reads whole while
// none of the bytes spell it: an ANSI colour, a zero width space or a soft hyphen inside it.
var shownEchoes = map[string]func(string) string{
	"ANSI colour":     func(s string) string { return s[:4] + "\x1b[31m" + s[4:8] + "\x1b[0m" + s[8:] },
	"zero width":      func(s string) string { return s[:5] + "\u200b" + s[5:] },
	"soft hyphen":     func(s string) string { return s[:6] + "\u00ad" + s[6:] },
	"byte order mark": func(s string) string { return s[:3] + "\ufeff" + s[3:] },
}

// TestPluginDataEchoingShownSecretsRedacted is TestPluginDataEchoingSecretsRedacted with a
// plugin that writes the secret into its data (version, manifest, node ID, publish and volume
// context, a volume's external ID) with an ANSI colour, a zero width space, a soft hyphen or a
// byte order mark inside it. volume status, status, plugin status and events (text, --json,
// -t) showed each: in text
// with the escapes as \x1b[31m or \u200b between the secret's parts, in --json as the
// JSON a reader decodes to the secret with nothing visible inside it, and the ANSI
// colour's reset leaves a terminal showing the rest in the plain. Each is redacted now.
func TestPluginDataEchoingShownSecretsRedacted(t *testing.T) {
	const secret = "shown-s3cret-40d9"
	ctx := context.Background()
	var all []string
	for _, echo := range shownEchoes {
		all = append(all, echo(secret))
	}
	mem := csitest.NewMountingMemPlugin(t, echoingMemConfig(strings.Join(all, " ")))
	echoCtx := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			r.Volume.VolumeContext = map[string]string{}
			sent := req.(*csipb.CreateVolumeRequest).GetSecrets()["token"]
			for name, echo := range shownEchoes {
				r.Volume.VolumeContext[name] = "ctx:" + echo(sent)
			}
			if req.(*csipb.CreateVolumeRequest).GetName() == "extid" {
				r.Volume.VolumeId = "vol-" + shownEchoes["ANSI colour"](sent) // the volume-create event names it
			}
		}
		return resp, err
	}
	_, e, eng := serveMem(t, mem, csitest.WithInterceptor(echoCtx))
	createWithSecret(t, e, "db", secret)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "extid", Name: "extid", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if v, err := e.Volume(ctx, "db"); err != nil || len(v.Context) != len(shownEchoes) {
		t.Fatalf("the plugin did not echo the secret into the volume context (%v, %v): the test tests nothing", v.Context, err)
	}
	// Every way the echoes may be printed: raw, escaped for a terminal, quoted by JSON or Go.
	var leaks []string
	for _, echo := range shownEchoes {
		s := echo(secret)
		j, _ := json.Marshal(s)
		q := strconv.Quote(s)
		leaks = append(leaks, s, spec.EscapeControl(s), string(j[1:len(j)-1]), q[1:len(q)-1], strconv.QuoteToASCII(s))
	}
	check := func(what string, out ...fmt.Stringer) {
		t.Helper()
		text := ""
		for _, o := range out {
			text += o.String()
		}
		for _, l := range append(leaks, secret) {
			if strings.Contains(text, strings.Trim(l, `"`)) {
				t.Errorf("%s shows the secret the plugin echoed as %q:\n%s", what, l, text)
			}
		}
		if !strings.Contains(text, "[REDACTED]") {
			t.Errorf("%s shows none of the plugin's echoes: the test tests nothing there:\n%s", what, text)
		}
	}
	exporters := map[string]exportFlags{"text": {}, "--json": {JSON: true}, "-t": {Template: `{{printf "%v" .}}`}}
	for name, x := range exporters {
		ios, _, out, errOut := iostreams.Test()
		if err := volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "db", Exporter: x}); err != nil {
			t.Fatal(err)
		}
		check("volume status db "+name, out, errOut)
		ios, _, out, errOut = iostreams.Test()
		if err := pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "mem", Exporter: x}); err != nil {
			t.Fatal(err)
		}
		check("plugin status mem "+name, out, errOut)
		ios, _, out, errOut = iostreams.Test()
		if err := eventsRun(ctx, &EventsOptions{IO: ios, Engine: eng, Now: nowFunc, Exporter: x}); err != nil {
			t.Fatal(err)
		}
		check("events "+name, out, errOut)
		ios, _, out, errOut = iostreams.Test()
		if err := statusRun(ctx, &StatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "extid", Exporter: x, MaxVolumes: 20}); err != nil {
			t.Fatal(err)
		}
		check("status extid "+name, out, errOut)
	}
}

// A plugin echoes the secret into the volume context with a character inside it that a terminal
// shows as nothing but that is neither a format character (Cf, shownView) nor escaped by
// spec.EscapeControl: COMBINING GRAPHEME JOINER, VARIATION SELECTOR-16, HANGUL FILLER. volume
// status printed it raw, and the terminal showed the secret whole (review32a). Now one predicate,
// spec.ShowsAsNothing, is both the scrubber's view's and the display's.
func TestVolumeStatusShowsNoSecretSplitByAnIgnorable(t *testing.T) {
	const secret = "shown-s3cret-40d9"
	ctx := context.Background()
	echoes := map[string]string{
		"cgj":    secret[:5] + "\u034f" + secret[5:],
		"vs16":   secret[:5] + "\ufe0f" + secret[5:],
		"filler": secret[:5] + "\u3164" + secret[5:],
	}
	mem := csitest.NewMountingMemPlugin(t, echoingMemConfig("x"))
	echoCtx := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			r.Volume.VolumeContext = map[string]string{}
			for k, v := range echoes {
				r.Volume.VolumeContext[k] = "ctx:" + v
			}
		}
		return resp, err
	}
	_, e, eng := serveMem(t, mem, csitest.WithInterceptor(echoCtx))
	createWithSecret(t, e, "db", secret)
	ios, _, out, _ := iostreams.Test()
	if err := volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "db"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ctx:") {
		t.Fatalf("volume status shows no context: the test tests nothing:\n%s", out)
	}
	for name, v := range echoes {
		if strings.Contains(out.String(), "ctx:"+v) {
			t.Errorf("volume status prints the %s echo raw, which reads as the secret %q:\n%s", name, secret, out)
		}
	}
}

// --json writes what shows as nothing as an escape, one past U+FFFF as JSON does, a surrogate
// pair, so the text decodes to the same string: VARIATION SELECTOR-17 and a tag (first byte
// 0xf3, which the hand-written pre-check skipped) and COMBINING GRAPHEME JOINER reached the
// terminal raw (review32a).
func TestJSONEscapesEveryIgnorable(t *testing.T) {
	in := "db\u034f\U000e0100\U000e0041\u3164"
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := escapeJSONControls(b)
	if want := `"db\u034f\udb40\udd00\udb40\udc41\u3164"`; string(out) != want {
		t.Errorf("escapeJSONControls(%s) = %s; want %s", b, out, want)
	}
	var back string
	if err := json.Unmarshal(out, &back); err != nil || back != in {
		t.Errorf("%s decodes to %+q (%v); want %+q", out, back, err, in)
	}
}
