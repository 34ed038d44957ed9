package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A volume a forced detach left attached (its plugin gone) is not deregistered without
// --force (exit 4, naming the node, the plugin and what to run); with --force it is, and the
// forgotten attachment is a warning on stderr, never silent.
func TestVolumeDeregisterOfAVolumeLeftAttached(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	h.claim(t, "db", "web-0")
	h.stop()
	if _, err := h.e.Detach(h.ctx, "db", true); err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.AttachedTo == "" {
		t.Fatalf("volume after the forced detach: %+v, %v; want it recorded attached", v, err)
	}
	run := func(force bool) (stdout, stderr string, err error) {
		ios, _, out, errOut := iostreams.Test()
		opts := &DeregisterOptions{IO: ios, Engine: h.engine, Confirm: func(bool, string) error { return nil }, ID: "db", Force: force, Yes: true}
		err = volumeDeregisterRun(h.ctx, opts)
		return out.String(), errOut.String(), err
	}
	_, _, err := run(false)
	if err == nil || ExitCode(err) != 4 || !strings.Contains(err.Error(), `plugin "mem"`) || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Fatalf("deregister without --force: %v (exit %d), want exit 4 naming the plugin and reconcile", err, ExitCode(err))
	}
	stdout, stderr, err := run(true)
	if err != nil {
		t.Fatalf("deregister --force: %v", err)
	}
	if stdout != "Volume \"db\" deregistered\n" {
		t.Errorf("stdout = %q", stdout)
	}
	if !strings.HasPrefix(stderr, `Warning: volume "db": its attachment to node `) || !strings.Contains(stderr, "is forgotten") {
		t.Errorf("stderr = %q, want the warning that the attachment is forgotten", stderr)
	}
}

// `volume status` of a volume handed over to Nomad while a local claim held it (forced, by an
// older volctl), once
// that claim is released: the attachment is kept for Nomad's allocations, and the status says
// what sends the unpublish owed (the take-back), not that a forced detach failed.
func TestVolumeStatusOfAnAttachmentKeptForNomad(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	h.claim(t, "db", "web-0")
	// Marked as a volctl before engine's TestForcedHandoverRefusesClaimsHoldingAnAttachment
	// did (the claim holds an attachment: HandOver refuses it now, even forced).
	st, err := store.Open(h.ctx, h.state)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(h.ctx, func(tx *store.Tx) error {
		return tx.Handovers().Put(&store.Handover{VolumeID: "db", Address: "http://127.0.0.1:4646", Forced: true})
	})
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	if _, err := h.e.Release(h.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	ios, _, out, _ := iostreams.Test()
	if err := volumeStatusRun(h.ctx, &VolumeStatusOptions{IO: ios, Engine: h.engine, Now: time.Now, ID: "db"}); err != nil {
		t.Fatal(err)
	}
	want := "with no local claim: the ControllerUnpublishVolume owed waits for the volume to be taken back from Nomad at http://127.0.0.1:4646 (`volctl nomad release db`), then `volctl reconcile` sends it"
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "a forced detach could not send it") {
		t.Errorf("volume status:\n%s\nwant it to say %q", out, want)
	}
}
