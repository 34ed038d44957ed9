package cli

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// `volctl nomad register --dry-run` of several volumes against a Nomad that says it is busy
// (a 429) at the first stops asking and names the volumes not asked, with the command that does
// them. That command named `volctl nomad register v1 v2 v3` (or `--all`) without --dry-run:
// pasted, it registered the volumes in Nomad and marked them handed over where the user had only
// asked what would happen. It is the plan again.
func TestDryRunNotAskedAdviceKeepsDryRun(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 3)
	n := newFakeNomad(t)
	var asked atomic.Int32
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Retry-After", "30")
		http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
	})
	for _, all := range []bool{false, true} {
		ios, _, _, _ := iostreams.Test()
		opts := &NomadRegisterOptions{IO: ios, Engine: h.engine, DryRun: true, Nomad: n.client}
		if all {
			opts.All = true
		} else {
			opts.Volumes = ids
		}
		err := nomadRegisterRun(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), "not asked") {
			t.Fatalf("register --dry-run (all %v) against a Nomad answering 429: %v, want the volumes not asked named", all, err)
		}
		msg := err.Error()
		i := strings.Index(msg, "not asked")
		advice := msg[i:]
		if !strings.Contains(advice, "--dry-run") {
			t.Errorf("register --dry-run (all %v): the command it names for the volumes not asked is not a plan: %q\n(pasted, it registers them in Nomad and marks them handed over)", all, advice)
		}
	}
}
