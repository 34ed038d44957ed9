package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestNomadStatusOfAHandedOverVolumeDoesNotDriftWhenItsPluginIsDeregistered: the plugin's node
// states {zone=a} and its CreateVolume answers volume db accessible from {Zone=a}; `volctl
// nomad register db` sends Nomad the node's spelling, {zone=a} (then respelled when read),
// which Nomad keeps as the volume's topology. Nothing about the volume changes after, but the
// local plugin is deregistered (--force, as the handover's next step takes it: Nomad runs the
// plugin now). `volctl nomad status db` then reports that Nomad's copy differs in
// topology_request ({"zone"="a"} against volctl's {"Zone"="a"}), a field Nomad refuses to
// update: RegisterSpec respells the key from the plugin's *current* fingerprint, which is gone,
// so volctl's side of the comparison changed while neither copy did. The user is told of a drift
// that does not exist, and a `nomad register db` now sends a topology Nomad refuses to update
// (or, re-registered anew as advised, one its scheduler places on no node). Correct behaviour:
// what volctl compares and sends for a volume does not depend on whether its plugin is registered
// at the moment: the node spelling is recorded with the volume (or with its handover) and kept.
// Found by helper review81 (ownb).
func TestNomadStatusOfAHandedOverVolumeDoesNotDriftWhenItsPluginIsDeregistered(t *testing.T) {
	h, n := handedOverAnsweredInAnotherCase(t)
	n.mu.Lock()
	topos, _ := n.sent["default/db"]["Topologies"].([]any)
	n.mu.Unlock()
	sentTopo, _ := json.Marshal(topos)
	if len(topos) != 1 || !strings.Contains(string(sentTopo), `"zone":"a"`) {
		t.Fatalf("precondition: Nomad keeps db's topology as %v, want the node's spelling {zone=a}", topos)
	}
	if st, _, _ := runNomadStatusOf(t, h, n); len(anyStrings(st[0]["differs"])) != 0 {
		t.Fatalf("precondition: nomad status right after the handover reports differences %v", st[0]["differs"])
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatalf("precondition: plugin deregister --force mem: %v", err)
	}
	st, _, notes := runNomadStatusOf(t, h, n)
	if d := anyStrings(st[0]["differs"]); len(d) != 0 {
		t.Errorf("nomad status of db, which neither volctl nor Nomad changed since its handover, reports differences %v once its local plugin is deregistered:\n%s", d, notes)
	}
}

// TestNomadRegisterAgainOfAHandedOverVolumeIsNotRefusedWhenItsPluginIsDeregistered: as
// TestNomadStatusOfAHandedOverVolumeDoesNotDriftWhenItsPluginIsDeregistered, db is handed over
// with the node's spelling {zone=a}, and its local plugin then deregistered (--force).
// `volctl nomad register --dry-run db` (what a registration again, after a capacity or
// capability change, would do) now plans to send {Zone=a} and says Nomad refuses it (exit 4:
// Nomad keeps a registered volume's topology, "topology request update was not compatible"),
// advising Nomad's copy be deregistered and registered anew, with a key spelling Nomad's
// scheduler matches on no node. Correct behaviour: a registration again sends the topology the
// volume was handed over with; nothing differs, nothing is refused.
// Found by helper review81 (ownb).
func TestNomadRegisterAgainOfAHandedOverVolumeIsNotRefusedWhenItsPluginIsDeregistered(t *testing.T) {
	h, n := handedOverAnsweredInAnotherCase(t)
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatalf("precondition: plugin deregister --force mem: %v", err)
	}
	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true})
	if err != nil {
		t.Errorf("nomad register --dry-run db, unchanged since its handover but for its local plugin's deregistration: %v (exit %d)\n%s%s", err, ExitCode(err), out, errOut)
	}
}

// TestOutsideTopologyReasonDoesNotNameATabAndABackslashTAlike: the plugin's node states
// {k=`a\tb`} (a backslash and a t: a plugin's value, whose bytes volctl takes as they are), and
// CreateVolume answers the volume accessible from {k="a<TAB>b"}. The volume is rightly judged
// outside the node's topology, but the reason words both as {k=a\tb}: segmentWord quotes a
// value holding =, a comma, a brace or a quote, else only escapes its control characters
// (EscapeControl leaves backslashes as they are), so an escaped control character and the same
// text typed read alike, and the user is told the volume is not accessible from the very
// topology the node is in, the failure segmentWord was written to end ("two topologies never
// read alike"). Correct behaviour: a key or value holding a backslash (or a control character)
// is quoted too, so the two read {k="a\\tb"} and {k="a\tb"}.
// Found by helper review81 (ownb).
func TestOutsideTopologyReasonDoesNotNameATabAndABackslashTAlike(t *testing.T) {
	volume, node, why := outsideReasonTopologies(t, map[string]string{"k": `a\tb`}, map[string]string{"k": "a\tb"})
	if volume == node {
		t.Errorf("volume ov is not schedulable because its topology is not its plugin's node's, and the reason names both as %s: %q", volume, why)
	}
}

// handedOverAnsweredInAnotherCase is volume db, created through a plugin whose node states
// {zone=a} and whose CreateVolume answered {Zone=a}, handed over to a fake Nomad.
func handedOverAnsweredInAnotherCase(t *testing.T) (*cliHarness, *fakeNomad) {
	t.Helper()
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) {
		c.Name = "hostpath.csi.volctl.dev" // the driver the fake Nomad runs the plugin as
		c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
		c.CreateTopology = &spec.Topology{Segments: map[string]string{"Zone": "a"}}
	})
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatalf("precondition: create db answered {Zone=a}: %v", err)
	}
	n := newFakeNomad(t)
	if out, errOut, err := registerIn(h, n); err != nil {
		t.Fatalf("precondition: nomad register db: %v (%s%s)", err, out, errOut)
	}
	return h, n
}
