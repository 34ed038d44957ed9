package tui

import (
	"context"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// Every view of the dashboard, drawn with a hostile plugin's records in the state: a plugin
// that echoes every secret and mount flag it was sent into every error, as sent and
// upper-cased, and whose node ID holds a volume's secret upper-cased. Its records reach each
// table (a claim's last error, the plugin's, the events), the volume and plugin details, a
// confirmation, an action's error box, a filter typed to match the secret, at widths that cut
// or wrap a line (a secret cut by the column, its halves on two drawn rows). No frame shows
// five bytes together of any secret, in any case. Before (secrets38), the scrubber matched a
// value in its own case only, and the upper-cased echoes were drawn whole.
func TestEveryViewOfAnEchoingPluginsRecordsShowsNoSecret(t *testing.T) {
	const secret, flagSecret = "Kq7wZx-Tui38-Mv4pRs", "Pw9dLn-Flag38-Hc2tYb"
	ctx := context.Background()
	faults := csitest.NewFaults()
	faults.EchoEncoded(strings.ToUpper)
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-" + strings.ToUpper(secret)
	e := mountingEngine(t, cfg, csitest.WithFaults(faults))
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	for _, id := range []string{"db", "spare"} {
		if _, err := e.CreateVolume(ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem", Capabilities: caps,
			Secrets:      spec.Secrets{"token": secret},
			MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "password=" + flagSecret}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err != nil {
		t.Fatal(err)
	}
	// A release the plugin refuses, echoing: the claim keeps its last error, the log an event.
	faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	if _, err := e.Release(ctx, "db", "web-0"); err == nil || !strings.Contains(err.Error(), strings.ToUpper(flagSecret)[:4]) && !strings.Contains(err.Error(), "echo:") {
		t.Fatalf("release = %v, want the echoing plugin's error", err)
	}
	// A probe the plugin fails, echoing: the plugin's last error.
	faults.FailAlways(csi.RPCProbe, codes.FailedPrecondition)
	if _, err := e.PluginStatus(ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	raw, err := e.Events(ctx, 0, engine.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// The test tests something only if the state holds the echoes unscrubbed somewhere the
	// dashboard reads: the node ID, as the plugin gave it.
	if ps, _ := e.Plugins(ctx); len(ps) != 1 || !strings.Contains(ps[0].NodeID, strings.ToUpper(secret)) {
		t.Fatalf("the plugin's node ID does not hold the secret upper-cased (%+v): the test tests nothing", ps)
	}
	if len(raw) == 0 {
		t.Fatal("no events")
	}

	typed := strings.ToLower(secret[:8])
	h := newHarness(t, e, Options{})
	var frames []string
	draw := func(what string) {
		frames = append(frames, what+"\n"+h.m.View())
	}
	for _, size := range [][2]int{{40, 24}, {80, 24}, {200, 50}, {23, 8}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		h.send(probeTickMsg{})
		for _, tab := range []string{"1", "2", "3", "4", "5"} {
			h.keys(tab)
			draw("tab " + tab)
			h.keys("enter")
			draw("tab " + tab + " detail")
			h.keys("G")
			draw("tab " + tab + " detail, its end")
			h.keys("esc")
			// A filter typed to match the secret matches no row (the rows are scrubbed before
			// the filter sees them: no guessing a secret a byte at a time by what matches), and
			// one its redaction would match does. The filter shows what the user typed.
			h.keys("/", typed)
			if rows := h.viewKeys(); len(rows) != 0 {
				t.Errorf("tab %s: a filter of the secret's first bytes matches rows %q", tab, rows)
			}
			draw("tab " + tab + " filtered by the secret")
			h.keys("esc", "/", "redact")
			draw("tab " + tab + " filtered by [REDACTED]")
			h.keys("esc")
		}
		// The claims view: the release's question, then its error box.
		h.keys("2", "x")
		draw("release question")
		h.keys("tab", "enter")
		draw("release error")
		h.keys("enter", "esc")
		h.keys("?")
		draw("help")
		h.keys("esc")
	}
	shown := strings.Join(frames, "\n")
	if !strings.Contains(shown, "[REDACTED]") || !strings.Contains(shown, "echo:") {
		t.Fatalf("no frame shows the plugin's echo redacted: the views did not reach it\n%s", shown)
	}
	// What the user typed into the filter is theirs, shown as typed; nothing else may be.
	low := strings.ReplaceAll(strings.ToLower(shown), typed, "")
	for _, s := range []string{secret, flagSecret} {
		s = strings.ToLower(s)
		for i := 0; i+5 <= len(s); i++ {
			if strings.Contains(low, s[i:i+5]) {
				for _, f := range frames {
					if strings.Contains(strings.ReplaceAll(strings.ToLower(f), typed, ""), s[i:i+5]) {
						t.Errorf("a frame shows %q of a secret:\n%s", s[i:i+5], f)
						break
					}
				}
				break
			}
		}
	}
}
