package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A volume a forced detach left attached (its plugin gone) is not deregistered without
// --force (exit 4, naming the node, the plugin and what to run); with --force it is, and the
// forgotten attachment is a warning on stderr, never silent.
func TestVolumeDeregisterOfAVolumeLeftAttached(t *testing.T) {
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
