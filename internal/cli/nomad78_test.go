package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestNomadRegisterOwedNodeExpansionAdviceReadsThePluginAsItIsNow: volume db was grown while on
// no path here (ControllerExpandVolume answered node_expansion_required), so a NodeExpandVolume
// is owed, and its plugin then restarted with a node service without EXPAND_VOLUME. `volctl
// nomad register db` is refused for the debt, and advises "claim it once to finish the expansion
// (`volctl volume claim db --alloc expand`, then `volctl volume release db --alloc expand`)":
// its refusal (engine handOverStored, payOwedWords) reads the plugin's fingerprint as recorded
// before the restart, and nothing in the handover reaches the plugin first. Followed, the claim's
// publish sends no NodeExpandVolume (the node cannot take one), the debt stays, and the handover
// is refused again. At the same moment `volctl volume deregister db` (which refreshes the
// fingerprint first: refreshForOwed) names the real cause, the node's missing
// EXPAND_VOLUME. Correct behaviour: the handover's refusal advises what pays the debt for the
// plugin as it is now (as the deregister's does), so that its advice, followed, works. Found by
// helper review78 (nomad).
func TestNomadRegisterOwedNodeExpansionAdviceReadsThePluginAsItIsNow(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "hostpath.csi.volctl.dev" // the driver fakeNomad runs the plugin as
	mem := csitest.NewMountingMemPlugin(t, cfg)
	socket, stop := csitest.Serve(t, csitest.WithServer(mem))
	e := openEngine(t, filepath.Join(t.TempDir(), "state"))
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	eng := func(context.Context) (*engine.Engine, error) { return e, nil }
	mem.AnswerNodeExpansionRequired(true)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ExpandVolume(ctx, "db", 20<<20, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := e.Volume(ctx, "db"); err != nil || v.NodeExpansionOwed != 20<<20 {
		t.Fatalf("precondition: db owes a NodeExpandVolume of %d (%v), want %d", v.NodeExpansionOwed, err, 20<<20)
	}
	// The plugin restarts without EXPAND_VOLUME on its node service.
	stop()
	mem.Reconfigure(func(c *csitest.MemConfig) { c.Node.ExpandVolume = false })
	stop = csitest.ServeAt(t, socket, csitest.WithServer(mem))

	n := newFakeNomad(t)
	ios, _, _, _ := iostreams.Test()
	refusal := nomadRegisterRun(ctx, &NomadRegisterOptions{IO: ios, Engine: eng, Nomad: n.client, Volumes: []string{"db"}})
	if refusal == nil || ExitCode(refusal) != ExitConflict {
		t.Fatalf("precondition: handover of db, owed a NodeExpandVolume: %v (exit %d), want refused, exit 4", refusal, ExitCode(refusal))
	}
	if claim := lastAdvised(refusal.Error(), "volctl volume claim"); claim != "" || !strings.Contains(refusal.Error(), "EXPAND_VOLUME") {
		t.Fatalf("handover refusal of db owed a NodeExpandVolume its plugin's node can no longer take: %v\nwant it to name the missing EXPAND_VOLUME, not advise a claim that sends nothing", refusal)
	}
	// The advice followed: the plugin started with EXPAND_VOLUME on its node again; the
	// refusal now advises the claim and release that send it.
	stop()
	mem.Reconfigure(func(c *csitest.MemConfig) { c.Node.ExpandVolume = true })
	csitest.ServeAt(t, socket, csitest.WithServer(mem))
	refusal = nomadRegisterRun(ctx, &NomadRegisterOptions{IO: ios, Engine: eng, Nomad: n.client, Volumes: []string{"db"}})
	if refusal == nil || ExitCode(refusal) != ExitConflict {
		t.Fatalf("handover of db with the plugin's node expanding again: %v (exit %d), want refused for the debt still owed", refusal, ExitCode(refusal))
	}
	claim, release := lastAdvised(refusal.Error(), "volctl volume claim"), lastAdvised(refusal.Error(), "volctl volume release")
	if claim == "" {
		t.Fatalf("handover refusal of db with the plugin's node expanding again advises no claim: %v", refusal)
	}
	// The advice followed, as written.
	if code, errOut := runOn(ctx, e, advisedArgs(t, claim)...); code != 0 {
		t.Fatalf("the refusal advises `%s`; it exits %d: %s", claim, code, errOut)
	}
	if release == "" {
		t.Fatalf("the refusal advises no release after its claim: %v", refusal)
	}
	if code, errOut := runOn(ctx, e, advisedArgs(t, release)...); code != 0 {
		t.Fatalf("then `%s`: exit %d: %s", release, code, errOut)
	}
	if v, err := e.Volume(ctx, "db"); err != nil || v.NodeExpansionOwed != 0 {
		t.Errorf("the handover's refusal advised `%s`, then `%s` to finish the expansion; followed, db still owes a NodeExpandVolume of %d (%v): "+
			"the plugin's node has no EXPAND_VOLUME since its restart, which the refusal, reading the fingerprint recorded before it, did not say\nrefusal: %v",
			claim, release, v.NodeExpansionOwed, err, refusal)
	}
	if err := nomadRegisterRun(ctx, &NomadRegisterOptions{IO: ios, Engine: eng, Nomad: n.client, Volumes: []string{"db"}}); err != nil {
		t.Errorf("handover of db once its NodeExpandVolume was sent: %v", err)
	}
}

// TestNomadRegisterForcedPastAnotherRecordOfItsStorageSaysSo: volume db's storage is recorded
// again here as volume db2 (through plugin hp2 on hp's socket, as an older volctl left it), and
// db2 is still staged on this node. `volctl nomad register db` refuses ("records the storage of
// volume "db2" too ... or pass --force"); with --force it prints only `Registered volume "db" in
// Nomad at ...; volctl no longer claims it`, exit 0, with no warning or note, and the
// nomad-handover event says nothing of db2 either, while Nomad's allocs and volctl's claims of
// db2 now share one storage, each ignoring the other's access mode. The mark records forced=true
// (engine handOverStored's `elsewhere`), but what was forced is said nowhere; a handover forced
// past live claims or an owed expansion says what it left (keptClaimsNote, expansionKeptNote).
// Correct behaviour: the forced handover says (a note on stderr, and its event) that db2
// records its storage too and holds it, and what that means. Found by helper review78 (nomad).
func TestNomadRegisterForcedPastAnotherRecordOfItsStorageSaysSo(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	recordTwice(t, h, "hp", "hp2", func(tx *store.Tx) error {
		return tx.Stagings().Put(&store.Staging{VolumeID: "db2", PluginID: "hp2", NodeID: "n1", Staged: true, StagingPath: h.state + "/staging/hp2/db2"})
	})
	if _, _, err := registerIn(h, n); err == nil || !strings.Contains(err.Error(), `"db2"`) {
		t.Fatalf("precondition: handover of db without --force: %v, want refused naming db2", err)
	}
	ios, _, out, errOut := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, Force: true}); err != nil {
		t.Fatalf("handover with --force: %v", err)
	}
	if !strings.Contains(errOut.String(), "db2 (plugin hp2)") || !strings.Contains(errOut.String(), "`volctl volume deregister db2`") {
		t.Errorf("nomad register --force of db, past db2 recording its storage too and holding it, says nothing of db2:\nstdout: %s\nstderr: %s", out, errOut)
	}
}

// TestNomadRegisterForcedPastAnOwedUnpublishSaysSo: volume db is recorded as attached to node
// n1 with no claim holding it (a ControllerUnpublishVolume a forced detach could not send).
// `volctl nomad register db` refuses for it; with --force it prints only `Registered volume "db"
// in Nomad at ...; volctl no longer claims it`, exit 0, stderr empty: nothing says that the
// volume went to Nomad still attached to n1, with the unpublish owed until it is taken back
// (only the nomad-handover event says so). A handover forced past live claims or an owed
// expansion notes what it left (keptClaimsNote, expansionKeptNote; nomadRegisterOne in
// internal/cli/nomad.go has no note for the owed unpublish). Correct behaviour: the forced
// handover notes the attachment it kept and when its unpublish is sent. Found by helper review78
// (nomad).
func TestNomadRegisterForcedPastAnOwedUnpublishSaysSo(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	updateStore(t, h, func(tx *store.Tx) error {
		return tx.Stagings().Put(&store.Staging{VolumeID: "db", PluginID: "hp", NodeID: "n1", ControllerPublished: true})
	})
	if _, _, err := registerIn(h, n); err == nil || !strings.Contains(err.Error(), "ControllerUnpublishVolume") {
		t.Fatalf("precondition: handover of db without --force: %v, want refused for the owed ControllerUnpublishVolume", err)
	}
	ios, _, out, errOut := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, Force: true}); err != nil {
		t.Fatalf("handover with --force: %v", err)
	}
	if !strings.Contains(out.String()+errOut.String(), `node "n1"`) {
		t.Errorf("nomad register --force of db, past the ControllerUnpublishVolume from node n1 it owes, says nothing of it:\nstdout: %s\nstderr: %s", out, errOut)
	}
}
