package cli

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestNomadStatusJQFilterStopsAtCtrlC: nomadStatusRun writes its output through
// opts.Exporter.Write(local, ...), local being context.WithoutCancel(ctx), so that an
// interrupt while Nomad is asked still prints every row. But the same context now runs the
// --jq filter or -t template: a filter that never ends (a typo'd `last(repeat(1))`) is no
// longer stopped by Ctrl-C or by timeout(1)'s SIGTERM (main ignores a second signal), and
// runs on to maxFilterTime (a minute), then fails as a usage error (exit 2) saying the filter
// ran too long, not that the command was interrupted. Every other command's filter stops at
// the interrupt (exportFlags.Write: "runs until it ends, ctx does (Ctrl-C ...)"). Correct
// behaviour: an interrupt that arrives while the filter runs stops it promptly, the error
// saying the command was interrupted (exit 1, not 2).
// Found by helper review81 (ownc).
func TestNomadStatusJQFilterStopsAtCtrlC(t *testing.T) {
	d := maxFilterTime
	maxFilterTime = 8 * time.Second // the bound the filter runs into when Ctrl-C does not stop it
	t.Cleanup(func() { maxFilterTime = d })
	h := nomadHarness(t)
	n := newFakeNomad(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Ctrl-C 1.5 s after Nomad's last answer: by then the command asks Nomad nothing more,
	// and its filter runs.
	var mu sync.Mutex
	var timer *time.Timer
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		mu.Lock()
		defer mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
		timer = time.AfterFunc(1500*time.Millisecond, cancel)
	})
	ios, _, out, _ := iostreams.Test()
	opts := &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Exporter: jqFlags(t, `last(repeat(1))`)}
	start := time.Now()
	err := nomadStatusRun(ctx, opts)
	took := time.Since(start)
	if ctx.Err() == nil {
		t.Fatalf("precondition: the command ended (%v, after %s) before the interrupt", err, took)
	}
	if took > 5*time.Second || err == nil || !strings.Contains(err.Error(), "interrupted") || ExitCode(err) == ExitUsage {
		t.Errorf("nomad status --jq 'last(repeat(1))' interrupted while its filter ran returned after %s with %v (exit %d); want it stopped at the interrupt, saying so (exit 1)\nstdout: %s",
			took.Round(100*time.Millisecond), err, ExitCode(err), out)
	}
}

// TestValidateWarnsOfGroupMountFlagSecretsReadableByOthers: heldSecrets (cli/specfiles.go)
// now warns of a volume spec whose mount flags hold a secret (password=...) in a file other
// users may read, but looks only at f.Volume and f.Plugins: a group file whose volume
// request's mount_options carry the same password=... (which fileSecrets, beside it, counts as
// the file's secrets, and the state scrubs from every output) in a 0644 file gets no
// "Secrets readable by other users" warning. Correct behaviour: a group file whose volumes'
// mount flags hold a secret is warned of as a volume file's are, naming the chmod.
// Found by helper review81 (ownc).
func TestValidateWarnsOfGroupMountFlagSecretsReadableByOthers(t *testing.T) {
	const group = `group "web" {
  volume "data" {
    type            = "csi"
    source          = "db"
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
    mount_options {
      fs_type     = "cifs"
      mount_flags = ["username=svc", "password=Tr0ub4dor-and-3"]
    }
  }
}
`
	const volume = validVolume + "mount_options {\n  fs_type     = \"cifs\"\n  mount_flags = [\"username=svc\", \"password=Tr0ub4dor-and-3\"]\n}\n"
	dir := writeSpecs(t, map[string]string{"group.hcl": group, "volume.hcl": volume})
	warned := func(name string) (bool, string) { return readableSecretsWarned(t, dir, name) }
	if ok, all := warned("volume.hcl"); !ok {
		t.Fatalf("precondition: a 0644 volume file whose mount flags hold password=... is not warned of:\n%s", all)
	}
	if ok, all := warned("group.hcl"); !ok {
		t.Errorf("a 0644 group file whose volume's mount flags hold password=... is not warned of as readable by other users (a volume file's are):\n%s", all)
	}
}

// TestExportNomadOfARegisteredVolumeWithAFoldedTopologyKeyIsPlaceableByNomad: a volume
// registered requiring {Zone=a} through a plugin whose node states {zone=a} is admitted here
// (spec.SegmentsWithin folds keys, the CSI spec has them case-insensitive) and `volume status`
// says it is schedulable. Until f2bb6ac8 nomad.RequiredTopologies respelled its
// topology_request.required as the node spells it (engine.VolumeInfo.NodeSpelling); that
// commit moved the respelling into finishCreate (spelledAsNode) for created volumes only, and
// left a registered volume's required topology as its spec spells it. `export nomad` (and
// `volctl nomad register`, through the same RegisterSpec) now writes {Zone = "a"}, which
// Nomad's scheduler, comparing keys byte for byte with the node's fingerprint, matches on no
// node: the volume volctl says is schedulable here is handed over unplaceable, and nothing is
// said. Correct behaviour: the exported required topology is one Nomad matches where volctl
// admits claims (keys spelled as the node states them, recorded so at the registration as at
// the create: registerRound; checkImmutable compares keys folded).
// Found by helper review81 (ownc).
func TestExportNomadOfARegisteredVolumeWithAFoldedTopologyKeyIsPlaceableByNomad(t *testing.T) {
	node := map[string]string{"zone": "a"}
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: node}
	})
	// Storage the plugin holds, made and forgotten, registered again as a volume made elsewhere is.
	made, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "made", Name: "made", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.e.DeregisterVolumeReleasing(h.ctx, "made", false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RegisterVolume(h.ctx, spec.Volume{ID: "rv", Name: "rv", Type: "csi", PluginID: "mem", ExternalID: made.ExternalID,
		Capabilities:    []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"Zone": "a"}}}}}); err != nil {
		t.Fatalf("precondition: register requiring {Zone=a}: %v", err)
	}
	if info, err := h.e.Volume(h.ctx, "rv"); err != nil || !info.Schedulable {
		t.Fatalf("precondition: volume rv is not schedulable on the plugin's node {zone=a} (%v): %s", err, info.Schedulability())
	}
	// Nomad's scheduler: the node's topology Contains one of the volume's, key by key as bytes.
	placeable, src := exportedPlaceable(t, h, "rv", node)
	// The same spec registered again is no change: the key in another case is the same key.
	if _, err := h.e.RegisterVolume(h.ctx, spec.Volume{ID: "rv", Name: "rv", Type: "csi", PluginID: "mem", ExternalID: made.ExternalID,
		Capabilities:    []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"Zone": "a"}}}}}); err != nil {
		t.Errorf("the same spec registered again: %v; want no change", err)
	}
	if !placeable {
		t.Errorf("volume rv, schedulable here on the plugin's node {zone=a}, is exported as below, which Nomad's scheduler (keys compared as bytes) matches on no node "+
			"of this plugin:\n%s", src)
	}
}
