package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestExportNomadNodeIDOfOneOfARegisteredVolumesTopologiesIsTaken: a hostpath volume registered
// (not created) with topology_request.required naming two nodes, edge-7 (where its plugin
// runs) and edge-8, is accessible from either: volctl's own admission (topologyMatch) and
// Nomad's scheduler (CSITopology.MatchFound) take a node matching any one required topology.
// `export nomad --node-id edge-7` is refused, "volume "rv"'s topology names node "edge-8" ...
// give --node-id edge-8", and --node-id edge-8 is refused in turn naming edge-7; without
// --node-id, "export them per node with --node-id", which is each of those. No plugin job can
// be exported for it, and every advice goes round (cli exportPluginJobs requires every
// required topology to name the node, where one is what the volume file asks). Correct
// behaviour: a --node-id that one of the volume's required topologies names is taken (the job
// serves a node Nomad may place the volume on), and the export writes the plugin job for it.
// Found by helper review77 (nomad).
func TestExportNomadNodeIDOfOneOfARegisteredVolumesTopologiesIsTaken(t *testing.T) {
	h := newCLIHarness(t)
	registeredOnEdge7(t, h, "edge-7", "edge-8")
	var dir string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes = []string{"rv"}
		o.Plugin.VolctlPath = "/usr/local/bin/volctl"
		o.Plugin.NodeID = "edge-7"
		dir = o.OutDir
	})
	if err != nil {
		t.Fatalf("export with --node-id edge-7 of volume rv, whose required topologies are edge-7 or edge-8: %v (exit %d, stderr %q); "+
			"want the plugin job for edge-7 written (Nomad places rv on a node matching any one required topology)", err, ExitCode(err), stderr)
	}
	job, rerr := os.ReadFile(filepath.Join(dir, "plugin-hp.nomad.hcl"))
	if rerr != nil || !strings.Contains(string(job), `"--node-id", "edge-7"`) {
		t.Errorf("plugin job of the export with --node-id edge-7: %v\n%s", rerr, job)
	}
}

// TestNomadRegisterOwedNodeExpansionAdviceWorksForAReaderOnlyVolume: volume ro, whose one
// capability is single-node-reader-only, was grown while on no path here, its NodeExpandVolume
// owed. `volctl nomad register ro` refuses (exit 4) and advises "claim it once to finish the
// expansion (`volctl volume claim ro --alloc expand`, then `volctl volume release ro --alloc
// expand`), then hand it over". The advised claim asks for writing (no --read-only), and a
// volume with no writable capability refuses it ("has no capability matching a writable
// capability"): the advice, followed, does not work, and the expansion is never paid (engine
// handOverStored's refusal builds the claim with --alloc alone; the deregister's and the
// take-back's words are built the same way). Correct behaviour: the advised claim is one the
// volume takes (--read-only for a volume whose capabilities are all reader-only), so that
// following it pays the NodeExpandVolume and the handover then goes through.
// Found by helper review77 (nomad).
func TestNomadRegisterOwedNodeExpansionAdviceWorksForAReaderOnlyVolume(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "ro", Name: "ro", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeReaderOnly, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "ro", 20<<20, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "ro"); err != nil || v.NodeExpansionOwed != 20<<20 {
		t.Fatalf("precondition: node expansion owed after an expand on no path = %d (%v), want %d", v.NodeExpansionOwed, err, 20<<20)
	}
	n := newFakeNomad(t)
	ios, _, _, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"ro"}})
	if err == nil || ExitCode(err) != ExitConflict {
		t.Fatalf("precondition: handover of ro, owed a NodeExpandVolume: %v (exit %d), want refused, exit 4", err, ExitCode(err))
	}
	claim := lastAdvised(err.Error(), "volctl volume claim")
	if claim == "" {
		t.Fatalf("precondition: the refusal advises no claim: %v", err)
	}
	release := lastAdvised(err.Error(), "volctl volume release")
	code, errOut := runOn(h.ctx, h.e, advisedArgs(t, claim)...)
	if code != 0 {
		t.Fatalf("the handover's refusal advises `%s` to finish the expansion; as advised it exits %d: %s", claim, code, errOut)
	}
	if release == "" {
		t.Fatalf("the refusal advises no release after its claim: %v", err)
	}
	if code, errOut := runOn(h.ctx, h.e, advisedArgs(t, release)...); code != 0 {
		t.Fatalf("then `%s`: exit %d: %s", release, code, errOut)
	}
	if v, err := h.e.Volume(h.ctx, "ro"); err != nil || v.NodeExpansionOwed != 0 {
		t.Errorf("after the advised claim and release, ro still owes a NodeExpandVolume of %d (%v)", v.NodeExpansionOwed, err)
	}
	ios, _, _, _ = iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"ro"}}); err != nil {
		t.Errorf("the handover once the advice was followed: %v", err)
	}
}

// TestNomadRegisterForcedPastAnOwedNodeExpansionIsRecordedForced: volume db, owed a
// NodeExpandVolume to 20MiB, is refused a handover, and `volctl nomad register --force` hands
// it over past that refusal. Its mark records forced=false (`volume status --json`'s and `nomad
// status --json`'s handover.forced), as for a handover nothing was forced past, while one forced
// past live claims or an owed ControllerUnpublishVolume records true (engine handOverStored sets
// Forced from the live claims and the owed unpublish only; the node expansion owed and the
// ControllerExpandVolume pending, both refused without --force, are left out). A script
// reading `forced` to find the handovers that skipped a safety check misses this one, whose
// allocs get the file system at the old size. Correct behaviour: a handover that --force got
// past any refusal is recorded forced.
// Found by helper review77 (nomad).
func TestNomadRegisterForcedPastAnOwedNodeExpansionIsRecordedForced(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.ExpandVolume(h.ctx, "db", 20<<20, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.NodeExpansionOwed != 20<<20 || len(v.Claims) != 0 {
		t.Fatalf("precondition: db owes a NodeExpandVolume of %d with %d claims (%v), want %d and none", v.NodeExpansionOwed, len(v.Claims), err, 20<<20)
	}
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err == nil || ExitCode(err) != ExitConflict {
		t.Fatalf("precondition: handover of db without --force: %v (exit %d), want refused, exit 4", err, ExitCode(err))
	}
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, Force: true}); err != nil {
		t.Fatalf("handover with --force: %v", err)
	}
	hs, err := h.e.Handovers(h.ctx, "db")
	if err != nil || len(hs) != 1 {
		t.Fatalf("handover mark of db: %v, %v", hs, err)
	}
	if !hs[0].Forced {
		t.Errorf("db, handed over with --force past its owed NodeExpandVolume, is recorded forced=false: %+v", hs[0])
	}
}
