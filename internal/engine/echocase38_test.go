package engine

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestCaseChangedEchoedSecretsScrubbedOnEveryPath is TestEchoedSecretsScrubbedOnEveryPath with
// a plugin that echoes every value upper-cased, lower-cased and with its case swapped, as a
// plugin (or the mount helper it quotes) that shouts its errors does ("PASSWORD=HUNTER2"), and
// base64 of the upper-cased value. Before (secrets38), every path showed each of them: the
// scrubber matched a value in its own case only.
func TestCaseChangedEchoedSecretsScrubbedOnEveryPath(t *testing.T) {
	swap := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case 'a' <= r && r <= 'z':
				return r - 'a' + 'A'
			case 'A' <= r && r <= 'Z':
				return r - 'A' + 'a'
			}
			return r
		}, s)
	}
	echoedSecretsScrubbed(t, echoSentinels{secret: "Echo-Secret@7f3a/x y+z?", volFlag: "VolFlag:7f3a/P@ss=?",
		claimFlag: "ClaimFlag 7f3a+Q@r", other: "Other-Volume-Secret/7f3a:S@t"}, map[string]func(string) string{
		"upper-cased":               strings.ToUpper,
		"lower-cased":               strings.ToLower,
		"case swapped":              swap,
		"base64 of the upper-cased": func(s string) string { return base64.StdEncoding.EncodeToString([]byte(strings.ToUpper(s))) },
	})
}

// The honest case the scrubber over-masked: a volume mounted with words of mount(8)'s own
// vocabulary ("noatime", "sync", a claim's "dev"), whose plugin's error says which flag it
// refused and what failed. Before (secrets38), the flags masked every "noatime" of the message,
// the "sync" in "fsync" and "async" and the "dev" in "/dev/sdb1" (the request's flags, which
// the client scrubs from its answer, held "dev" though the state's values did not): the
// message read "mount -o [REDACTED],[REDACTED] failed: f[REDACTED] /[REDACTED]/sdb1". The
// flag with a password in it is masked still, here and in every other case of it.
func TestMountVocabularyFlagsAreShownInAPluginsMessage(t *testing.T) {
	h := newHarness(t, nil)
	sv := volume("db")
	sv.MountOptions = &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "sync", "password=Hunter2-Longer"}}
	h.create(sv)
	const said = "mount -o noatime,sync failed: fsync /dev/sdb1 (async): password Hunter2-Longer, PASSWORD=HUNTER2-LONGER rejected"
	const want = "mount -o noatime,sync failed: fsync /dev/sdb1 (async): password [REDACTED], [REDACTED] rejected" // the flag whole, upper-cased
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.InvalidArgument, Message: said, Times: 1})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a1", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"dev"}}})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("claim = %v\nwant the plugin's message as %q", err, want)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.e.RedactValue(h.ctx, &evs); err != nil { // as every command shows them
		t.Fatal(err)
	}
	shown := fmt.Sprint(evs)
	if !strings.Contains(shown, want) {
		t.Errorf("the events, as shown, lack the plugin's message as %q:\n%s", want, shown)
	}
	if strings.Contains(strings.ToLower(shown), "hunter2") {
		t.Errorf("the events show the mount flag's password:\n%s", shown)
	}
	values, err := h.e.secretValues(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"noatime", "sync", "dev"} {
		if slices.Contains(values, w) {
			t.Errorf("the state's secret values hold the mount(8) word %q: %q", w, values)
		}
	}
	for _, v := range []string{"password=Hunter2-Longer", "Hunter2-Longer"} {
		if !slices.Contains(values, v) {
			t.Errorf("the state's secret values lack %q: %q", v, values)
		}
	}
}
