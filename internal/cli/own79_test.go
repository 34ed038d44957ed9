package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestHandedOverRegisterWarningAdviceRunsWhereTheVolumeWasHandedOver: `volctl volume register`
// again, changed, of a volume handed over to Nomad in region eu (NOMAD_REGION=eu at its
// `volctl nomad register`) warns that Nomad's copy is unchanged and that "`volctl nomad
// register db` sends it there (with NOMAD_ADDR=ADDR)": no NOMAD_REGION. Followed as written
// (NOMAD_ADDR set, nothing else), the registration names no region and is refused, exit 4, as a
// handover elsewhere ("already handed over to Nomad at ADDR (region eu), not to Nomad at ADDR"):
// the advice does not do what it says. The warning builds its own command instead of the mark's
// (HandoverInfo.RegisterAgain: the mark's NOMAD_ADDR quoted, its NOMAD_NAMESPACE and
// NOMAD_REGION, or NOMAD_REGION unset, and the credential put back), which every other piece of
// advice about a handed-over volume uses. Correct: the warning's command, run with the settings
// it names, registers where the volume was handed over.
// Found by helper review79 (own), in this round's own change.
func TestHandedOverRegisterWarningAdviceRunsWhereTheVolumeWasHandedOver(t *testing.T) {
	n := newFakeNomad(t)
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) { c.Name = "hostpath.csi.volctl.dev" }) // the driver fakeNomad runs the plugin as
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 1 << 20})
	const base = "id = \"db\"\ntype = \"csi\"\nplugin_id = \"mem\"\nexternal_id = \"ext-db\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	if code, _, errOut := h.runReported("volume", "register", specFile61(t, "db.hcl", base)); code != 0 {
		t.Fatalf("register: exit %d: %s", code, errOut)
	}
	// Handed over in region eu (NOMAD_REGION=eu at its `volctl nomad register`).
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: n.srv.URL, Namespace: "default", Region: "eu"}, false, nil); err != nil {
		t.Fatal(err)
	}
	changed := specFile61(t, "db.hcl", base+"mount_options {\n  mount_flags = [\"noatime\"]\n}\n")
	code, out, errOut := h.runReported("volume", "register", changed)
	if code != 0 || !strings.Contains(errOut, "not Nomad's copy") {
		t.Fatalf("register again, changed, of a handed-over volume: exit %d\nstdout: %s\nstderr: %s\nwant exit 0 and the warning that Nomad's copy is unchanged", code, out, errOut)
	}
	if !strings.Contains(errOut, "volctl nomad register db") {
		t.Fatalf("the warning names no `volctl nomad register db`: %s", errOut)
	}

	// Follow the warning as written: the NOMAD_* settings it names, and no others.
	for _, k := range []string{"NOMAD_ADDR", "NOMAD_REGION", "NOMAD_NAMESPACE", "NOMAD_TOKEN", "NOMAD_HTTP_AUTH"} {
		t.Setenv(k, "")
	}
	for _, m := range regexp.MustCompile("NOMAD_(ADDR|REGION|NAMESPACE)=('[^']*'|[^\\s)`]+)").FindAllStringSubmatch(errOut, -1) {
		t.Setenv("NOMAD_"+m[1], strings.Trim(m[2], "'"))
	}
	ios, _, _, regErr := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: nomadClient, Volumes: []string{"db"}})
	if err != nil {
		t.Errorf("the warning of a register again of a volume handed over in region eu:\n%s\nfollowed as written, `volctl nomad register db` was refused (exit %d): %v\n%s\n"+
			"want its advice to name what runs the registration where the volume was handed over (NOMAD_REGION=eu, as HandoverInfo.RegisterAgain says it)",
			errOut, ExitCode(err), err, regErr.String())
	}
}

// TestGroupStatusOfAnAllocWhoseClaimIsBeingReleasedAdvisesWhatWorks: group "api" (one alloc,
// volumes "data" and "logs") runs, then a release of api[0]'s claim of data (`volctl claim
// release`, or another volctl's) fails at ControllerUnpublishVolume and leaves it being
// released, for reconcile. Since the heldClaims change (engine groupInfo: Missing computed from
// the claims not being released), `group status api` lists data twice: its claim "needs
// reconcile", and again as "missing (a run cut short: `volctl group run FILE` of its spec
// again)" (the last run succeeded: no run error to show). Nothing was cut short, and followed,
// the run again is refused: the alloc's claim is being released, which only reconcile finishes.
// (The dashboard's group detail says the same: internal/tui groupDetail.) Correct: a volume
// whose claim is being released is not advised a run again; the status names what finishes the
// release (`volctl reconcile`), as the claim's own row and the failed group's line do.
// Found by helper review79 (own), in this round's own change.
func TestGroupStatusOfAnAllocWhoseClaimIsBeingReleasedAdvisesWhatWorks(t *testing.T) {
	requireMount(t)
	faults := csitest.NewFaults()
	h := newCLIHarnessServing(t, csitest.WithFaults(faults))
	h.createVolume(t, "data", spec.MultiNodeMultiWriter)
	h.createVolume(t, "logs", spec.MultiNodeMultiWriter)
	t.Cleanup(func() {
		faults.Clear()
		_, _ = h.e.StopGroup(context.Background(), "api")
		_, _ = h.e.Reconcile(context.Background())
	})
	if _, err := h.e.RunGroup(h.ctx, apiGroup(t, "data", "logs")); err != nil {
		t.Fatalf("group run: %v", err)
	}
	faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Internal)
	if _, err := h.e.Release(h.ctx, "data", "api[0]"); err == nil {
		t.Fatalf("release of api[0]'s claim whose ControllerUnpublishVolume fails succeeded (the precondition)")
	}
	claims, err := claimsOf(h, "data")
	if err != nil || len(claims) != 1 || !claims[0].Releasing {
		t.Fatalf("claims of data after the failed release = %+v, %v; want api[0]'s, left releasing (the precondition)", claims, err)
	}
	faults.Clear()
	code, out, errOut := h.runReported("group", "status", "api")
	if code != 0 {
		t.Fatalf("group status api: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "`volctl group run") {
		t.Errorf("group status api of an alloc whose claim is being released advises a run again, which its release refuses:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^api\[0\] +data +write +node-detached \(needs reconcile\)`).MatchString(out) {
		t.Errorf("group status api does not say api[0]'s claim of data needs reconcile:\n%s", out)
	}
	// Followed: reconcile finishes the release; the run again then gives api[0] data again.
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile, as the claim's row advises: %v (%+v)", err, rep.Problems)
	}
	code, out, errOut = h.runReported("group", "status", "api")
	if code != 0 || !strings.Contains(out, "`volctl group run FILE` of its spec again") {
		t.Errorf("group status api once the release finished: exit %d\n%s%s\nwant data missing, a run again advised", code, out, errOut)
	}
	if _, err := h.e.RunGroup(h.ctx, apiGroup(t, "data", "logs")); err != nil {
		t.Fatalf("group run again, as advised: %v", err)
	}
	code, out, errOut = h.runReported("group", "status", "api")
	if code != 0 || !regexp.MustCompile(`(?m)^Allocs Ready += 1/1$`).MatchString(out) {
		t.Errorf("group status api after the run again: exit %d\n%s%s\nwant 1/1 ready", code, out, errOut)
	}
}
