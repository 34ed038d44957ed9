package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store/storetest"
)

// TestQuickstartRefusesANonUTF8TMPDIRBeforeItStarts: Linux allows any byte but "/" and NUL in
// a directory's name, and a $TMPDIR whose path is not UTF-8 (a name made in Latin-1) passes
// checkQuickstartTemp, which refuses a control character (the paths under it "would be refused
// at step 3") but not this. quickstart then makes its directory, starts its plugin, registers
// it and creates the volume, and fails at step 5: NodeStageVolume's staging path, under $TMPDIR,
// cannot be carried in CSI's UTF-8 strings ("volctl's request cannot be encoded ... give it in
// UTF-8", its rollback failing the same way), an error that never names $TMPDIR. Correct: the
// directory is refused before anything is made, naming $TMPDIR and that it is not UTF-8, as a
// control character in it is (TestQuickstartRefusesATMPDIRHoldingAControlCharacterBeforeItStarts).
// Found by helper review81 (quickstart).
func TestQuickstartRefusesANonUTF8TMPDIRBeforeItStarts(t *testing.T) {
	quickstartRefusesTempNamed(t, "t\xff", "UTF-8") // "tÿ" in Latin-1
}

// TestClaimInANonUTF8StateDirLeavesNoClaimForReconcile: a state dir whose path is not UTF-8
// (VOLCTL_STATE_DIR or --state-dir naming a Latin-1 directory; StateDir refuses a control
// character or a blank in it, not this) is taken, and `volctl volume claim` records the claim,
// then fails at NodeStageVolume, whose staging path under the state dir cannot be encoded in
// CSI's UTF-8 strings. The rollback's NodeUnstageVolume fails the same way, so the claim is left
// recorded, "(the claim is left ... for `volctl reconcile`)", and no reconcile can ever finish
// it: every RPC it sends carries the same path. The volume stays held by a claim that never
// held anything, a single-writer volume refusing every other claim, and the advice does not work
// when followed; nothing names the state dir as the cause. Correct: such a state dir is refused
// before anything is recorded (at StateDir, as a control character is), naming the state dir,
// and no claim is left behind.
// Found by helper review81 (quickstart).
func TestClaimInANonUTF8StateDirLeavesNoClaimForReconcile(t *testing.T) {
	ctx := context.Background()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	socket, _ := csitest.Serve(t, csitest.WithServer(mem))
	state := filepath.Join(t.TempDir(), "st\xff")
	storetest.Seed(t, state)
	h := &cliHarness{ctx: ctx, state: state, mem: mem}
	e, err := engine.Open(ctx, engine.Config{StateDir: state})
	if err != nil {
		t.Fatal(err) // the engine opens it (as an older volctl's state): the command refuses it
	}
	t.Cleanup(func() { e.Close() })
	h.e = e
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	createSingleWriter(t, e, "db")

	code, out, errOut := h.runReported("volume", "claim", "db", "--alloc", "web-0")
	if code == 0 {
		t.Fatalf("claim in a non-UTF-8 state dir succeeded: %s", out)
	}
	claims, err := e.Claims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) > 0 {
		rcode, _, rerr := h.runReported("reconcile")
		t.Errorf("the failed claim left %d claim(s) recorded (%s for %s: %s), which `volctl reconcile` cannot finish (exit %d: %s)\nclaim's stderr:\n%s",
			len(claims), claims[0].VolumeID, claims[0].Alloc, claims[0].State, rcode, strings.TrimSpace(rerr), errOut)
	}
	if code != ExitUsage || !strings.Contains(errOut, "state dir") || !strings.Contains(errOut, "not UTF-8") {
		t.Errorf("claim: exit %d, stderr:\n%s\nwant exit %d naming the state dir and that it is not UTF-8", code, errOut, ExitUsage)
	}
}

// TestInitIntoAnExistingDirectoryWithATrailingSlashAdvisesAFileInIt: `volctl init volume specs`,
// specs an existing directory, is refused saying specs is a directory and naming the command that
// writes the example into it (TestInitIntoAnExistingDirectoryDoesNotAdviseRemovingIt). Typed as
// a shell's tab completion writes a directory's name, `volctl init volume specs/`, the open with
// O_CREAT|O_EXCL fails with EISDIR rather than EEXIST, initRun's directory check (which looks for
// fs.ErrExist) is passed by, and the user gets the bare "init volume: open specs/: is a
// directory", with no file to give instead. Correct: the same refusal and advice as without the
// slash (`volctl init volume specs/volume.hcl`).
// Found by helper review81 (quickstart).
func TestInitIntoAnExistingDirectoryWithATrailingSlashAdvisesAFileInIt(t *testing.T) {
	specs := filepath.Join(t.TempDir(), "specs")
	if err := os.Mkdir(specs, 0o755); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	err := initRun(&InitOptions{IO: ios, Kind: spec.KindVolume, File: specs + "/"})
	if err == nil {
		t.Fatalf("init volume %s/ (an existing directory) succeeded", specs)
	}
	advised := "volctl init volume " + filepath.Join(specs, "volume.hcl")
	if !strings.Contains(err.Error(), "is a directory; give a file") || !strings.Contains(err.Error(), advised) {
		t.Errorf("init volume %s/: %v\nwant it refused as a directory, advising `%s`", specs, err, advised)
	}
}

// `volctl init volume nodir/`, a directory's name of a directory that is not there, said "is a
// directory" of nothing: it says the name ends in "/" and no such directory exists, and the
// file it advises is written as advised.
func TestInitIntoAMissingDirectoryNameSaysSo(t *testing.T) {
	nodir := filepath.Join(t.TempDir(), "nodir")
	ios, _, _, _ := iostreams.Test()
	err := initRun(&InitOptions{IO: ios, Kind: spec.KindVolume, File: nodir + "/"})
	if err == nil || !strings.Contains(err.Error(), "no such directory exists") || !strings.Contains(err.Error(), "volctl init volume "+nodir+".hcl") {
		t.Fatalf("init volume %s/: %v; want it refused saying no such directory exists, advising %s.hcl", nodir, err, nodir)
	}
	if err := initRun(&InitOptions{IO: ios, Kind: spec.KindVolume, File: nodir + ".hcl"}); err != nil {
		t.Fatalf("init volume %s.hcl, as advised: %v", nodir, err)
	}
}
