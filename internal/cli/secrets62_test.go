package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// Nomad's CLI and Go's flag package take a long flag with one dash, and `-secret=KEY=VALUE`
// is how such a flag is given its value in one word; volctl's flag hints know the habit
// (flagSuggestions: "Nomad's and Go's single-dash long flags") and answer it with "Did you
// mean --secret". But the error they follow is pflag's, quoted whole by root's
// SetFlagErrorFunc: "unknown shorthand flag: 's' in -secret=token=VALUE", the secret value
// printed on stderr (a CI log, a terminal's scrollback), as is a mount flag's password given
// `-mount-flag=password=VALUE`, and by "bad flag syntax" for `---secret=token=VALUE`. Now the
// word is shown up to its "=" (flagErrorShown). Found by helper review62.
func TestMistypedSecretFlagsValueIsNotEchoed(t *testing.T) {
	h := newCLIHarness(t)
	const secret = "pw62-dash-s3cret"
	for _, args := range [][]string{
		{"volume", "snapshot", "list", "-secret=token=" + secret},
		{"volume", "snapshot", "delete", "mem", "snap-1", "-secret=token=" + secret},
		{"volume", "claim", "db", "a1", "-mount-flag=password=" + secret},
		{"volume", "snapshot", "list", "---secret=token=" + secret},
	} {
		code, out, errOut := h.runReported(args...)
		if code == 0 {
			t.Fatalf("%q: exit 0; want the flag refused", args)
		}
		if !strings.Contains(errOut, "=… (its value not shown)") || !strings.Contains(errOut, "See 'volctl volume") {
			t.Errorf("volctl %s: the refusal does not say the flag's word, its value left out:\n%s", strings.Join(args, " "), errOut)
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("volctl %s: the refusal prints the secret value given with the flag:\n%s%s", strings.Join(args, " "), out, errOut)
		}
	}
}

// A hostile plugin echoes volume a's secret into the external IDs it answers, past 256 bytes
// so that an error quoting them cuts them (spec.Cut) in the middle of the secret, and answers
// volume b's create with a's ID but for case. refuseSharedStorage's near-spelling refusal
// quotes both IDs cut with %+q (and HCLQuotedASCII), which writes spec.Cut's mark "… (" as
// "\u2026 (": the scrubber's findAtCuts no longer sees where the value was cut, and the
// secret's head before the cut is printed by `volume create` and kept in the event log that
// `volctl events` prints. The same refusal of an ID equal to a's (%q, the mark kept) shows
// "[REDACTED]… (13 bytes more)". Now the scrubber finds the escaped mark too
// (csi.cutMarkEscaped). Found by helper review62.
func TestNearStorageRefusalShowsNoPartOfACutSecret(t *testing.T) {
	const secret = "pw62-near-cut-s3cret-zz"
	pad := strings.Repeat("x", 256-len("vol-")-10) // the cut falls 10 bytes into the secret
	echo := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			prefix := "vol-"
			if strings.HasPrefix(req.(*csipb.CreateVolumeRequest).GetName(), "volctl-b-") {
				prefix = "VOL-" // a's storage but for case
			}
			r.Volume.VolumeId = prefix + pad + secret
		}
		return resp, err
	}
	h := newCLIHarnessServing(t, csitest.WithInterceptor(echo))
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "a", Name: "a", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "b.hcl")
	if err := os.WriteFile(file, []byte("id = \"b\"\nname = \"b\"\ntype = \"csi\"\nplugin_id = \"mem\"\n"+
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	head := secret[:8] // "pw62-nea": 8 bytes of the 10 before the cut
	code, out, errOut := h.runReported("volume", "create", file)
	if code == 0 || !strings.Contains(errOut, "differs only in case") {
		t.Fatalf("volume create b: exit %d; want the near-spelling refusal:\n%s%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, head) {
		i := strings.Index(errOut, head)
		t.Errorf("volume create b prints the head of volume a's secret, cut in the quoted external ID: ...%s...", errOut[max(0, i-20):min(len(errOut), i+40)])
	}
	_, out, errOut = h.runReported("events")
	if i := strings.Index(out+errOut, head); i >= 0 {
		all := out + errOut
		t.Errorf("volctl events prints the head of volume a's secret from the refusal's event: ...%s...", all[max(0, i-20):min(len(all), i+40)])
	}
}
