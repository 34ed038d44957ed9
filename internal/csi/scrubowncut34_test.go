package csi_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestPluginMessageCutByThePluginInASecretShowsNoPartOfIt: a plugin that cuts its own message
// (a Go %.40s, a Python msg[:40], a backend's answer quoted truncated, "..." after it) cuts it
// in the middle of the secret it echoes: what is left is the secret's first bytes, which no
// search for the whole value finds. The stretch before the message's end (past closing quotes
// and brackets) or before an ellipsis that begins one of the secret's forms is scrubbed, as
// before spec.Cut's own mark. Before, "token=s3cr3t-SENTINEL-47" was shown, all but two bytes
// of the secret. An honest message keeps its words: an ending that begins no secret, or two
// bytes of one (minScrubLen), stays.
func TestPluginMessageCutByThePluginInASecretShowsNoPartOfIt(t *testing.T) {
	t.Parallel()
	cut := sentinelSecret[:len(sentinelSecret)-2] // "s3cr3t-SENTINEL-47"
	stagedMessagesShownAs(t, []struct{ msg, want string }{
		{"auth failed: token=" + cut, "auth failed: token=[REDACTED]"},
		{"auth failed: token=" + sentinelSecret[:3], "auth failed: token=[REDACTED]"},
		{"backend said \"token=" + cut + "\"", "backend said \"token=[REDACTED]\""},
		{"backend said (token=" + cut + ")", "backend said (token=[REDACTED])"},
		{"backend said 'token=" + cut + "'.", "backend said 'token=[REDACTED]'."},
		{"token=" + cut + "... (truncated)", "token=[REDACTED]... (truncated)"},
		{"token=" + cut + "…; retry later", "token=[REDACTED]…; retry later"},
		{"token: \\\"" + cut, "token: \\\"[REDACTED]"}, // JSON-quoted, cut inside the quote
		// Honest endings stay: no secret begins them, or two bytes only.
		{"volume vol-1 is not staged", "volume vol-1 is not staged"},
		{"auth failed: token=" + sentinelSecret[:2], "auth failed: token=" + sentinelSecret[:2]},
		{"staging... please wait", "staging... please wait"},
		// Nor does the end of a word whose tail begins a secret: no value begins inside a word.
		{"lookup of xs3cr", "lookup of xs3cr"},
		{"no answer from server (mount flag pas", "no answer from server (mount flag [REDACTED]"},
		// mount(8)'s "noatime", cut, is no secret's start (secrets38: spec.ShownMountFlag; this
		// case had "noa" masked, the flag taken for a secret).
		{"no answer from server (mount flag noa", "no answer from server (mount flag noa"},
	})
}

// stagedMessagesShownAs has a plugin refuse NodeStageVolume with each message in turn and
// checks the error shows it as want (its control bytes escaped as every message's are).
func stagedMessagesShownAs(t *testing.T, cases []struct{ msg, want string }) {
	t.Helper()
	h := newHarness(t, csitest.DefaultMemConfig())
	h.mem.AddVolume(csi.Volume{ID: "vol-1", CapacityBytes: 1 << 30})
	stage := sensitiveCalls(h.client, t.TempDir())[csi.RPCNodeStageVolume]
	ctx := context.Background()
	for _, c := range cases {
		h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.PermissionDenied, Message: c.msg, Times: 1})
		err := stage(ctx)
		if err == nil {
			t.Fatalf("%q: the injected fault did not fail the call", c.msg)
		}
		if got := csi.CodeOf(err); got != codes.PermissionDenied {
			t.Fatalf("%q: got %v, want the injected PermissionDenied", c.msg, err)
		}
		want := csi.EscapeControl(c.want)
		if !strings.Contains(err.Error(), ": "+want+" (") {
			t.Errorf("plugin message %q\nshown as %v\nwant %q", c.msg, err, want)
		}
	}
}
