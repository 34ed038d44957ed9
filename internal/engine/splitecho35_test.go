package engine

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestSecretSplitAcrossRetriedErrorsShowsNoPartOfIt: a plugin splits the secret it echoes
// across its errors to a claim and to the claim retried (scrub35): the first ends with its
// first half ("token=hunter2-", its own cut), the retried claim's begin with the rest
// ("s3cret-77 rejected", "…r2-s3cret-77 rejected", a text's tail). Whoever reads the claims'
// errors, the claim's last error and the event log together sees neither half. Before, the
// second half was shown on each: the scrubber looked for a cut value at a message's end, not
// at its start.
func TestSecretSplitAcrossRetriedErrorsShowsNoPartOfIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	const secret = "hunter2-s3cret-77"
	sv := volume("v")
	sv.Secrets = spec.Secrets{"token": secret}
	h.create(sv)
	var errs []string
	for _, m := range []string{"auth failed: token=" + secret[:8], secret[8:] + " rejected", "…" + secret[5:] + " rejected"} {
		// Each claim's attempts (the claim again, as a user retries it) fail so.
		h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.Unavailable, Message: m, Times: 3})
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
		if err == nil {
			t.Fatal("the claim succeeded: the plugin's faults were not met")
		}
		errs = append(errs, err.Error())
		h.faults.Clear()
	}
	claims, cerr := h.e.Claims(h.ctx)
	if cerr != nil {
		t.Fatal(cerr)
	}
	evs, eerr := h.e.Events(h.ctx, 0, EventFilter{})
	if eerr != nil {
		t.Fatal(eerr)
	}
	shown := strings.Join(errs, "\n") + "\n" + fmt.Sprintf("%+v\n%+v\n%+v", claims, evs, h.volumeInfo("v"))
	if !strings.Contains(shown, "rejected") {
		t.Fatalf("nothing shown holds the plugin's messages, so nothing was checked:\n%s", shown)
	}
	for _, part := range []string{"hunter2", "s3cret", "ter2-", "cret-77"} {
		if strings.Contains(shown, part) {
			t.Errorf("%q of the secret is shown:\n%s", part, shown)
		}
	}
}
