package engine

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// TestEchoedSecretsScrubbedOnEveryPath plays a hostile plugin that echoes every secret value
// and mount flag it has ever been sent in every error, whichever RPC fails, and fails the RPCs
// that carry none (NodeUnpublishVolume, NodeUnstageVolume, Probe, ListSnapshots): the engine
// must not hand back, store or log any of them, on the claim, release, reconcile, restore,
// plugin health, snapshot, expand, create and delete paths.
func TestEchoedSecretsScrubbedOnEveryPath(t *testing.T) {
	t.Parallel()
	echoedSecretsScrubbed(t, echoSentinels{secret: "echo-secret-7f3a", volFlag: "volflag-7f3a",
		claimFlag: "claimflag-7f3a", other: "other-volume-secret-7f3a"}, nil)
}

// TestReencodedEchoedSecretsScrubbedOnEveryPath is TestEchoedSecretsScrubbedOnEveryPath with a
// plugin that echoes every value also re-encoded: percent-encoded as in a URL's user info, query
// or path, in base64 (both alphabets, padded and raw, and inside basic auth's "user:value" at
// each of base64's three alignments) and hex. The values hold characters each encoding changes.
func TestReencodedEchoedSecretsScrubbedOnEveryPath(t *testing.T) {
	t.Parallel()
	b64 := func(enc *base64.Encoding, prefix string) func(string) string {
		return func(s string) string { return enc.EncodeToString([]byte(prefix + s)) }
	}
	encodings := map[string]func(string) string{
		"url.QueryEscape": url.QueryEscape,
		"url.PathEscape":  url.PathEscape,
		"URL user info":   func(s string) string { return url.UserPassword("u", s).String() },
		"base64 std":      b64(base64.StdEncoding, ""),
		"base64 URL":      b64(base64.URLEncoding, ""),
		"base64 raw std":  b64(base64.RawStdEncoding, ""),
		"base64 raw URL":  b64(base64.RawURLEncoding, ""),
		"basic auth u":    b64(base64.StdEncoding, "u:"),
		"basic auth us":   b64(base64.StdEncoding, "us:"),
		"basic auth usr":  b64(base64.StdEncoding, "usr:"),
		"hex":             func(s string) string { return hex.EncodeToString([]byte(s)) },
	}
	echoedSecretsScrubbed(t, echoSentinels{secret: "echo-secret@7f3a/x y+z?", volFlag: "volflag:7f3a/p@ss=?",
		claimFlag: "claimflag 7f3a+q@r", other: "other-volume-secret/7f3a:s@t"}, encodings)
}

// echoSentinels are the values the hostile plugin is sent and echoes.
type echoSentinels struct{ secret, volFlag, claimFlag, other string }

// echoedSecretsScrubbed runs the engine's paths with a plugin that echoes every value it was
// sent, as it is and in each of encodings, and checks that no path shows any of them in any
// of those forms.
func echoedSecretsScrubbed(t *testing.T, s echoSentinels, encodings map[string]func(string) string) {
	h := newHarness(t, nil)
	encs := slices.Collect(maps.Values(encodings))
	h.faults.EchoEncoded(encs...)
	secret, volFlag, claimFlag, other := s.secret, s.volFlag, s.claimFlag, s.other
	var sentinels []string
	for _, v := range []string{secret, volFlag, claimFlag, other} {
		sentinels = append(sentinels, v)
		for name, enc := range encodings {
			if e := enc(v); e == v || strings.Contains(e, v) {
				t.Fatalf("%s leaves %q as it is: the test needs values it changes", name, v)
			}
			sentinels = append(sentinels, enc(v))
		}
	}
	check := func(what string, v any) {
		t.Helper()
		var text string
		switch v := v.(type) {
		case string:
			text = v
		case error:
			if v == nil {
				t.Fatalf("%s: no error, so the case did not take its path", what)
			}
			text = v.Error()
		default:
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			text = string(b) + fmt.Sprintf(" %+v", v)
		}
		for _, s := range sentinels {
			if strings.Contains(text, s) {
				t.Errorf("%s leaks %q:\n%s", what, s, text)
			}
		}
	}
	claimWithSecretsToEcho(h, secret, volFlag, other, claimFlag)
	if seen := strings.Join(h.faults.Seen(), " "); !strings.Contains(seen, claimFlag) || !strings.Contains(seen, other) {
		t.Fatalf("the plugin was not sent what it should echo; it saw %q", seen)
	}

	// Release: NodeUnpublishVolume fails retryably, and the claim is left for reconcile with
	// the error stored.
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	_, err := h.e.Release(h.ctx, "db", "a1")
	if err == nil || !strings.Contains(err.Error(), "echo:") {
		t.Fatalf("release = %v, want the echoing plugin's error", err)
	}
	check("release error", err)
	// Reconcile: NodeUnpublishVolume now succeeds and NodeUnstageVolume fails.
	h.faults.Clear()
	h.faults.FailAlways(csi.RPCNodeUnstageVolume, codes.Internal)
	rep, err := h.e.Reconcile(h.ctx)
	check("reconcile error", err)
	check("reconcile report", rep)
	if rep.OK() {
		t.Fatalf("reconcile reports nothing wrong: %+v", rep)
	}
	h.faults.Clear()

	// Plugin health: Probe carries nothing.
	h.faults.FailAlways(csi.RPCProbe, codes.FailedPrecondition)
	ps, err := h.e.PluginStatus(h.ctx, "mem")
	check("plugin status error", err)
	check("plugin status", ps)
	h.faults.Clear()

	// Snapshots, expansion, claims, create and delete of the other volume.
	h.faults.FailAlways(csi.RPCListSnapshots, codes.Internal)
	sl, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	check("list snapshots error", err)
	check("snapshot list", sl)
	h.faults.Clear()
	for _, c := range []struct {
		rpc string
		do  func() error
	}{
		{csi.RPCCreateSnapshot, func() error { _, err := h.e.CreateSnapshot(h.ctx, "other", "s1", nil); return err }},
		{csi.RPCControllerExpandVolume, func() error { _, err := h.e.ExpandVolume(h.ctx, "other", 4<<20, 0); return err }},
		{csi.RPCNodePublishVolume, func() error { _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "other", Alloc: "b1"}); return err }},
		{csi.RPCCreateVolume, func() error { _, err := h.e.CreateVolume(h.ctx, volume("third")); return err }},
		{csi.RPCDeleteVolume, func() error { return h.e.DeleteVolume(h.ctx, "other") }},
	} {
		h.faults.FailAlways(c.rpc, codes.Internal)
		err := c.do()
		h.faults.Clear()
		if err == nil || !strings.Contains(err.Error(), "echo:") {
			t.Errorf("%s: %v, want the echoing plugin's error", c.rpc, err)
		}
		check(c.rpc+" error", err)
	}

	// What was stored: the claim's last error, the volume's view, every event.
	check("volume db", h.volumeInfo("db"))
	claims, err := h.e.Claims(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("claims", claims)
	evs, err := h.e.Events(h.ctx, 0, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	check("events", evs)
	stored := fmt.Sprint(evs) + fmt.Sprint(claims)
	if !strings.Contains(stored, "echo:") {
		t.Errorf("no stored error holds the plugin's echo, so nothing was checked:\n%s", stored)
	}
}

// claimWithSecretsToEcho makes volume "db" with secret as its token and volFlag as its mount
// flag, volume "other" with its own token, and claims db for alloc a1 with claimFlag: the
// secrets a plugin that echoes what it is sent then has to echo.
func claimWithSecretsToEcho(h *harness, secret, volFlag, other, claimFlag string) {
	h.t.Helper()
	sv := volume("db")
	sv.Secrets = spec.Secrets{"token": secret}
	sv.MountOptions = &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{volFlag}}
	h.create(sv)
	ov := volume("other")
	ov.Secrets = spec.Secrets{"token": other}
	h.create(ov)
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "a1", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{claimFlag}}})
}
