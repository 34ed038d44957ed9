package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A plugin answers CreateVolume with a volume ID volctl refuses (it holds a control character),
// and that ID holds a secret the request carried: whole, or placed so that the quote of the ID,
// cut to 128 bytes, cuts the secret. The refusal quoted the ID unscrubbed, in the error (stderr,
// --json, a CI log) and in the volume-create event: the volume is not recorded, so nothing
// that scrubs with the state's secrets (the command line's RedactError, the log's handler)
// knew the secret to take it out; and a secret cut at the quote's end is not found whole by
// any scrub after the cut. No part of it may be shown.
func TestCreateAnsweredWithAnIDHoldingASecretShowsNoPartOfIt(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value-0123456789abcdef"
	for _, tt := range []struct{ name, id string }{
		{"whole", "vol-\x1b-" + secret},
		{"at the quote's cut", "vol-\x1b" + strings.Repeat("p", 110) + secret},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			sv := volume("v")
			sv.Secrets = map[string]string{"token": secret}
			h.mem.AddVolume(csi.Volume{ID: tt.id, CapacityBytes: 1 << 30})
			h.mem.AnswerCreateWith(tt.id)
			_, err := h.e.CreateVolume(h.ctx, sv)
			if err == nil || !strings.Contains(err.Error(), "control character U+001B") {
				t.Fatalf("create answered with volume ID %q: %v, want it refused for its control character", tt.id, err)
			}
			shown := append([]string{err.Error()}, h.eventsSaying("volume-create", "")...)
			for _, s := range shown {
				if strings.Contains(s, secret[:3]) {
					t.Errorf("what volctl shows of the refused create holds part of the request's secret %q: %s", secret, s)
				}
			}
		})
	}
}
