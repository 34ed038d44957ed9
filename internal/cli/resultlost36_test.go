package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestReconcileWhoseResultIsLostStillSaysItsProblems: `volctl reconcile --json | head -c0` (or
// a reader that died, or stdout on a full disk) with a problem left (here a snapshot delete whose
// answer was lost, which the plugin now refuses without the secret reconcile does not have).
// The problems go to stderr, which is still there, but reconcile returned its result's
// unprinted error first and never wrote them: stderr said "1 problem(s) left" and not which,
// nor what to run, so a script logging stderr learnt that something was left and nothing
// else. Now each problem is said on stderr as when stdout is read, and the exit is 1 saying
// what was done.
func TestReconcileWhoseResultIsLostStillSaysItsProblems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, faults := snapshotDeleteLeftOwed(t, "s1")
	faults.FailAlways(csi.RPCDeleteSnapshot, codes.PermissionDenied)

	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{{"reconcile", "--json"}, {"reconcile", "--jq", ".problems[].message"}} {
		for _, lost := range []string{"broken pipe", "no space left on device"} {
			out := full
			if lost == "broken pipe" {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				r.Close() // the reader gone before the first line
				defer w.Close()
				out = w
			}
			ios, _, _, errOut := iostreams.Test()
			ios.Out = &iostreams.Stdout{File: out}
			f := NewFactory(ios)
			f.engine = e
			root := NewRootCmd(f)
			root.SetArgs(args)
			code := f.Report(f.RedactError(ctx, root.ExecuteContext(ctx)))
			cmd := "volctl " + strings.Join(args, " ")
			for _, want := range []string{"Problem: ", `"s1"`, "DeleteSnapshot", "1 problem(s) left; only printing it failed: ", lost} {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("%s, its stdout lost (%s), a problem left: stderr %q; want it to say %q", cmd, lost, errOut.String(), want)
				}
			}
			if code != ExitError {
				t.Errorf("%s, its stdout lost (%s): exit %d, want %d", cmd, lost, code, ExitError)
			}
		}
	}
}

// TestGroupRunThatFailsInPartWhoseResultIsLostSaysWhatItKept: `volctl group run g.hcl |
// head -c0` whose second alloc fails (its volume, db[1], is not there) and whose first got
// its volume (db[0]): the run's error named the refused alloc alone, and the
// result that said the first alloc's claim was made and stands was dropped with it, so a
// script learnt of the failure and not of the claim kept. Now stderr says both, the exit
// status the failure's as before.
func TestGroupRunThatFailsInPartWhoseResultIsLostSaysWhatItKept(t *testing.T) {
	requireMount(t) // group run claims
	h := newCLIHarness(t)
	h.createVolume(t, "db[0]", spec.SingleNodeWriter) // db[1] is not there
	groupSpec := filepath.Join(t.TempDir(), "g.hcl")
	if err := os.WriteFile(groupSpec, []byte(`group "g" {
  count = 2
  volume "d" {
    type            = "csi"
    source          = "db"
    per_alloc       = true
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader gone before the first line
	defer w.Close()
	ios, _, _, errOut := iostreams.Test()
	ios.Out = &iostreams.Stdout{File: w}
	f := NewFactory(ios)
	root := NewRootCmd(f)
	root.SetArgs([]string{"--state-dir", h.state, "group", "run", groupSpec})
	code := f.Report(f.RedactError(h.ctx, root.ExecuteContext(h.ctx)))
	f.Close()
	for _, want := range []string{`group "g" run: 1 of 2 allocs have their volumes; only printing it failed: `, "broken pipe", `"db[1]"`} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("group run, one alloc of two failed, its stdout gone: stderr %q; want it to say %q", errOut.String(), want)
		}
	}
	if code != ExitError {
		t.Errorf("group run, one alloc of two failed: exit %d, want %d", code, ExitError)
	}
}

// TestDetachThatFailsInPartWhoseResultIsLostSaysWhatItReleased: `volctl volume detach db --yes
// | head -c0`, alloc a's claim released and b's failing (its NodeUnpublishVolume refused): the
// detach's error named b's failure alone, and the lines that said a's claim was released were
// dropped with the reader, with no word of them on stderr. Now stderr says both.
func TestDetachThatFailsInPartWhoseResultIsLostSaysWhatItReleased(t *testing.T) {
	requireMount(t) // it claims
	ctx := context.Background()
	faults := csitest.NewFaults()
	_, e, _ := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()), csitest.WithFaults(faults))
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
		t.Fatal(err)
	}
	b, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "b"})
	if err != nil {
		t.Fatal(err)
	}
	faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: codes.FailedPrecondition, When: func(req proto.Message) bool {
		return req.(*csipb.NodeUnpublishVolumeRequest).GetTargetPath() == b.TargetPath
	}})
	for _, args := range [][]string{{"volume", "detach", "db", "--yes"}, {"volume", "detach", "db", "--yes", "--json"}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // the reader gone before the first line
		ios, _, _, errOut := iostreams.Test()
		ios.Out = &iostreams.Stdout{File: w}
		f := NewFactory(ios)
		f.engine = e
		root := NewRootCmd(f)
		root.SetArgs(args)
		code := f.Report(f.RedactError(ctx, root.ExecuteContext(ctx)))
		w.Close()
		cmd := "volctl " + strings.Join(args, " ")
		// The second run finds a's claim released already and b's failing again: 0 released.
		released := map[bool]string{true: `volume "db": 1 claim(s) released; only printing it failed: `, false: `volume "db": 0 claim(s) released; only printing it failed: `}[args[len(args)-1] == "--yes"]
		for _, want := range []string{released, "broken pipe", `"b"`} {
			if !strings.Contains(errOut.String(), want) {
				t.Errorf("%s, a's claim released and b's failing, its stdout gone: stderr %q; want it to say %q", cmd, errOut.String(), want)
			}
		}
		if code != ExitError {
			t.Errorf("%s: exit %d, want %d", cmd, code, ExitError)
		}
	}
}
