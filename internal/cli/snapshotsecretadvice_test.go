package cli

import (
	"context"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
	"github.com/volctl/volctl/internal/spec"
)

// TestSnapshotDeleteWithSecretsAdviceRunsForADashedID: reconcile, finishing a snapshot delete
// whose answer was lost, sends no secret, and the plugin refuses it for want of one: the
// problem advises the delete again with --secret. A snapshot ID is the plugin's (or the
// user's, for a snapshot volctl has no record of) and may start with "-": the advice then
// wrote its arguments after "--", which ends the flags, and --secret after them, read as
// two more arguments: `volctl volume snapshot delete -- mem -old --secret KEY=VALUE` was
// refused ("accepts 2 arg(s), received 4"). The flag now comes before the "--".
func TestSnapshotDeleteWithSecretsAdviceRunsForADashedID(t *testing.T) {
	ctx := context.Background()
	const snap = "-old"
	e, faults := snapshotDeleteLeftOwed(t, snap)
	faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Code: codes.PermissionDenied, When: func(req proto.Message) bool {
		return len(req.(*csipb.DeleteSnapshotRequest).GetSecrets()) == 0
	}})
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios)
	f.engine = e
	root := NewRootCmd(f)
	root.SetArgs([]string{"reconcile"})
	f.Report(root.ExecuteContext(ctx))
	text := out.String() + errOut.String()
	advised := lastAdvised(text, "volctl volume snapshot delete")
	if advised == "" || !strings.Contains(advised, "--secret") {
		t.Fatalf("reconcile refused for want of a secret advises no delete with --secret: %s", text)
	}
	if err := parseAdvised(t, advised); err != nil {
		t.Fatalf("reconcile advises `%s`, which volctl refuses: %v", advised, err)
	}
	if got := strings.Join(shellquotetest.RunArgs(t, advised), " "); !strings.Contains(got, "--secret") || !strings.HasSuffix(got, "-- mem "+snap) {
		t.Fatalf("`%s` runs as %q: --secret is not a flag of it", advised, got)
	}
}

// snapshotDeleteLeftOwed serves a mem plugin whose volume db has snapshot snap (made on the
// plugin, by its name), and leaves a delete of it, sent with a secret, owed to reconcile: its
// answer was lost. The faults are cleared for the caller's own.
func snapshotDeleteLeftOwed(t *testing.T, snap string) (*engine.Engine, *csitest.Faults) {
	t.Helper()
	ctx := context.Background()
	faults := csitest.NewFaults()
	socket, e, _ := serveMem(t, csitest.NewMemPlugin(csitest.DefaultMemConfig()), csitest.WithFaults(faults))
	createSingleWriter(t, e, "db")
	v, err := e.Volume(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	c, err := csi.New(csi.Config{ControllerSocket: socket, NodeSocket: socket})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: v.ExternalID, Name: snap}); err != nil {
		t.Fatal(err)
	}
	faults.FailAlways(csi.RPCDeleteSnapshot, codes.Unavailable)
	if _, err := e.DeleteSnapshotNoted(ctx, "mem", snap, spec.Secrets{"token": "t0ps3cret"}); err == nil {
		t.Fatal("the delete with its answer lost succeeded")
	}
	faults.Clear()
	return e, faults
}
