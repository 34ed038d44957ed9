package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

const reviewMiB = int64(1) << 20

// restoreOfUnknownSizeUnlisted serves a mem plugin that can list no volume (neither
// LIST_VOLUMES nor GET_VOLUME), creates volume "big" (8 MiB), snapshot "s1" of it (recorded at
// 8 MiB), and volume "restored" from that snapshot, the plugin answering its CreateVolume with
// capacity_bytes 0 (unknown). It returns the engine, the plugin's faults and the snapshot.
func restoreOfUnknownSizeUnlisted(t *testing.T) (*engine.Engine, *csitest.Faults, engine.SnapshotInfo) {
	t.Helper()
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.Controller.ListVolumes, cfg.Controller.GetVolume = false, false
	faults := csitest.NewFaults()
	_, e, _ := serveMem(t, csitest.NewMemPlugin(cfg), csitest.WithFaults(faults))
	capability := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "big", Name: "big", Type: "csi", PluginID: "mem",
		CapacityMin: 8 * reviewMiB, Capabilities: capability}); err != nil {
		t.Fatal(err)
	}
	s, err := e.CreateSnapshot(ctx, "big", "s1", nil)
	if err != nil || s.SizeBytes != 8*reviewMiB {
		t.Fatalf("precondition: snapshot s1 of big: %+v, %v; want it recorded at 8 MiB", s, err)
	}
	faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
		m.(*csipb.CreateVolumeResponse).Volume.CapacityBytes = 0
	}})
	v, err := e.CreateVolume(ctx, spec.Volume{ID: "restored", Name: "restored", Type: "csi", PluginID: "mem",
		SnapshotID: s.ID, Capabilities: capability})
	if err != nil || v.CapacityBytes != 0 {
		t.Fatalf("precondition: restore of s1 answered with no size: %+v, %v; want it recorded with capacity 0", v, err)
	}
	return e, faults, s
}

// TestExpandOfAnUnlistedRestoreHadAlreadySaysNoListingNorSize: volume "restored" is restored
// from snapshot s1 (recorded at 8 MiB) through a plugin that answered no size and can list no
// volume. `volctl volume expand restored --size 4MiB` is had already (atLeastItsSource: a
// restore is at least its snapshot), nothing sent, outcome engine.Measured, no size recorded
// (capacity_bytes stays 0). The command prints `Volume "restored" is already , as its plugin
// lists it (volctl had no size recorded for it, and records this one now)`: a size left blank,
// a listing the plugin cannot give, and a size recorded that is not. The Measured text was
// written for learntSize's outcome, where the plugin listed the volume and its size was
// recorded. Correct: the line says the volume is at least the snapshot's 8 MiB (from the
// snapshot it was restored from), not grown, and names no listing and no size recorded.
// Found by helper review75.
func TestExpandOfAnUnlistedRestoreHadAlreadySaysNoListingNorSize(t *testing.T) {
	e, faults, _ := restoreOfUnknownSizeUnlisted(t)
	code, out, errOut := runOnOut(context.Background(), e, "volume", "expand", "restored", "--size", "4MiB")
	if code != ExitOK {
		t.Fatalf("precondition: volume expand restored --size 4MiB: exit %d, stderr %q", code, errOut)
	}
	if n := faults.Calls(csi.RPCControllerExpandVolume); n != 0 {
		t.Fatalf("precondition: ControllerExpandVolume sent %d times; want none (had already)", n)
	}
	v, err := e.Volume(context.Background(), "restored")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "as its plugin lists it") || strings.Contains(out, "records this one now") {
		t.Errorf("expand of a volume its plugin cannot list, its size still unrecorded (capacity_bytes %d), says %q", v.CapacityBytes, out)
	}
	if strings.Contains(out, "already ,") || !strings.Contains(out, "8MiB") {
		t.Errorf("expand says %q: no size, where the volume is at least its snapshot's 8 MiB", out)
	}
}

// TestCreateAgainOfAnUnlistedRestoreHadAlreadySaysNoListing: the same restore (through a plugin
// that can list no volume, answered with no size), created again from its spec with
// capacity_min = "4MiB" added. The replay's expansion is had already (atLeastItsSource: at least
// the snapshot's 8 MiB), nothing sent, outcome engine.Measured, no size recorded. The command
// prints `Volume "restored" exists; its plugin lists it at the spec's capacity_min or more, so
// it was not grown; its size, not known before, is recorded now`: the plugin listed nothing,
// and no size is recorded (capacity_bytes is still 0). Correct: the line says the volume is at
// least its snapshot's size, so it was not grown, and claims no listing and no size recorded.
// Found by helper review75.
func TestCreateAgainOfAnUnlistedRestoreHadAlreadySaysNoListing(t *testing.T) {
	e, faults, s := restoreOfUnknownSizeUnlisted(t)
	text := `id = "restored"
name = "restored"
type = "csi"
plugin_id = "mem"
snapshot_id = "` + s.ID + `"
capacity_min = "4MiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`
	ios, _, out, errOut := iostreams.Test()
	o := &VolumeSubmitOptions{IO: ios, Engine: func(context.Context) (*engine.Engine, error) { return e, nil },
		ReadFile: specFiles(map[string]string{"r.hcl": text}), Verb: spec.VerbCreate, Files: []string{"r.hcl"}}
	if err := volumeSubmitRun(context.Background(), o); err != nil {
		t.Fatalf("precondition: create again of restored with capacity_min 4MiB: %v; stderr %q", err, errOut)
	}
	if n := faults.Calls(csi.RPCControllerExpandVolume); n != 0 {
		t.Fatalf("precondition: ControllerExpandVolume sent %d times; want none (had already)", n)
	}
	v, err := e.Volume(context.Background(), "restored")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "its plugin lists it") || strings.Contains(out.String(), "is recorded now") {
		t.Errorf("create again of a volume its plugin cannot list, its size still unrecorded (capacity_bytes %d), says %q", v.CapacityBytes, out)
	}
}

// TestExportVolctlPathThatIsAFlagIsRefused: `volctl export nomad hv -o DIR --volctl-path
// --include-secrets` (the value of --volctl-path left out) takes "--include-secrets" as the
// volctl binary's name: a name alone, with no "/", is taken as one to look up in the Nomad
// clients' PATH. The export exits 0 saying it wrote the plugin job, whose task's command is
// "--include-secrets", a plugin that never starts in Nomad, and the flag meant is lost. The
// other path flags of this session (--out, --root, --log-file) refuse a value that begins with
// "-" (writtenPathProblem: the next flag taken as the value, exit 2, nothing written); this one,
// the path the exported plugin job runs, does not. Correct: refused as a usage error (exit 2)
// naming --volctl-path, nothing written.
// Found by helper review75.
func TestExportVolctlPathThatIsAFlagIsRefused(t *testing.T) {
	h := newCLIHarness(t)
	hostpathVolumeToExport(t, h, hostpath.Config{}, &spec.Exec{Command: "volctl",
		Args: []string{"plugin", "serve", "hostpath", "--root", t.TempDir(), "--node-id", "edge-7"}})
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errOut := runOnOut(h.ctx, h.e, "export", "nomad", "hv", "-o", dir, "--volctl-path", "--include-secrets")
	job, _ := os.ReadFile(filepath.Join(dir, "plugin-hp.nomad.hcl"))
	if code != ExitUsage || !strings.Contains(errOut, "--volctl-path") {
		t.Errorf("export nomad hv --volctl-path --include-secrets: exit %d, stdout %q, stderr %q; want exit 2 naming --volctl-path\nplugin job written:\n%s",
			code, out, errOut, job)
	}
	if len(job) > 0 {
		t.Errorf("the refused export wrote the plugin job anyway")
	}
}

// TestExpandHadAlreadyWhoseFilterFailsIsNotSaidExpanded: the unlisted restore of unknown size
// (restoreOfUnknownSizeUnlisted), `volctl volume expand restored --size 4MiB --jq
// 'error("stop")'`. The expand is had already (engine.Measured: at least the snapshot's 8 MiB),
// nothing sent and nothing grown: only capacity_min 4MiB is recorded. The filter failing after
// the work, the error is to say what was done (docs/json.md: `the error says what was done`);
// it says `volume "restored" expanded; only printing it failed`, so the script's log records an
// expansion that never happened, which is what expandChangedNothing was written to stop (round
// 61) for the Unchanged case. Correct: the error says the volume was not grown (it is at least
// the size asked already), what was recorded, and exits 1.
// Found by helper review75.
func TestExpandHadAlreadyWhoseFilterFailsIsNotSaidExpanded(t *testing.T) {
	e, faults, _ := restoreOfUnknownSizeUnlisted(t)
	code, out, errOut := runOnOut(context.Background(), e, "volume", "expand", "restored", "--size", "4MiB", "--jq", `error("stop")`)
	if n := faults.Calls(csi.RPCControllerExpandVolume); n != 0 {
		t.Fatalf("precondition: ControllerExpandVolume sent %d times; want none (had already)", n)
	}
	if v, err := e.Volume(context.Background(), "restored"); err != nil || v.RequestedMin != 4*reviewMiB {
		t.Fatalf("precondition: the expand recorded capacity_min %d, %v; want 4MiB", v.RequestedMin, err)
	}
	if code != ExitError {
		t.Errorf("expand whose filter failed after recording capacity_min: exit %d, want 1; stderr %q", code, errOut)
	}
	if strings.Contains(errOut, `"restored" expanded`) {
		t.Errorf("expand that sent nothing and grew nothing (the volume is at least its snapshot's 8 MiB) says %q (stdout %q)", errOut, out)
	}
}

// TestCreateAgainUnchangedWhoseFilterFailsIsNotSaidCreated: volume "a" is created, then
// `volctl create a.hcl --jq 'error("stop")'` runs again on the same spec. The engine finds it
// made with this spec (engine.Unchanged: nothing sent, nothing recorded; the text says
// `Volume "a" unchanged: it exists with this spec`). The filter failing on the result, the
// error is to say what was done (docs/json.md); it says `volume "a" created; only printing it
// failed`, so a script's log records a create that never happened, as the expand's did before
// round 61 (expandChangedNothing). volumeSubmitRun words every volume of the result with the
// verb's past tense, whatever its outcome. Correct: the error says the volume was found
// unchanged (nothing was done for it), never "created".
// Found by helper review75.
func TestCreateAgainUnchangedWhoseFilterFailsIsNotSaidCreated(t *testing.T) {
	h := newCLIHarness(t)
	file := filepath.Join(t.TempDir(), "a.hcl")
	if err := os.WriteFile(file, []byte(strings.NewReplacer("%s", "a").Replace(createSpec)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, errOut := runOn(h.ctx, h.e, "volume", "create", file); code != ExitOK {
		t.Fatalf("precondition: first create: exit %d, %s", code, errOut)
	}
	code, out, errOut := runOnOut(h.ctx, h.e, "volume", "create", file)
	if code != ExitOK || !strings.Contains(out, `Volume "a" unchanged`) {
		t.Fatalf("precondition: create again of the same spec: exit %d, stdout %q, stderr %q; want it said unchanged", code, out, errOut)
	}
	code, out, errOut = runOnOut(h.ctx, h.e, "volume", "create", file, "--jq", `error("stop")`)
	if code == ExitOK {
		t.Fatalf("create whose filter failed exited 0; stdout %q", out)
	}
	if strings.Contains(errOut, `"a" created`) {
		t.Errorf("create again of a volume found unchanged (nothing sent, nothing recorded), its filter failing, says %q", errOut)
	}
}
