package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestCompletionShowsNoControlCharacters plays a plugin whose snapshot IDs carry an escape
// sequence and a spec whose volume name holds a carriage return and a bidi override (the CSI
// string rules let \t, \n and \r through, and no rule refuses bidi formatting). Shells show
// completions' descriptions as they get them (zsh's and fish's menus) and insert the value in
// the command line: a description is shown escaped, as a table cell is, and a value a terminal
// would act on, which could not be typed as offered anyway, is not offered.
func TestCompletionShowsNoControlCharacters(t *testing.T) {
	ctx := context.Background()
	hostileSnap := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateSnapshotResponse); ok && err == nil && req.(*csipb.CreateSnapshotRequest).GetName() != "" &&
			strings.Contains(req.(*csipb.CreateSnapshotRequest).GetName(), "evil") {
			r.Snapshot.SnapshotId = "snap" + hostileText
		}
		return resp, err
	}
	_, e, _ := serveMem(t, csitest.NewMemPlugin(csitest.DefaultMemConfig()), csitest.WithInterceptor(hostileSnap))
	state := e.StateDir()
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "a\rb\u202ec", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"good", "evil"} {
		if _, err := e.CreateSnapshot(ctx, "db", name, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		args []string
		want string // a line that must be offered
	}{
		{[]string{"volume", "claim", ""}, "db\ta\\rb\\u202ec, plugin mem\n"},
		{[]string{"volume", "snapshot", "delete", "mem", ""}, "good\tsnapshot good of db\n"},
	} {
		args := tt.args
		ios, _, out, _ := iostreams.Test()
		f := NewFactory(ios)
		f.completionTimeout = time.Hour
		root := NewRootCmd(f)
		root.SetArgs(append([]string{"__complete", "--state-dir", state}, args...))
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got := out.String()
		if i := strings.IndexFunc(got, func(r rune) bool {
			return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f || spec.IsBidiControl(r)
		}); i >= 0 {
			t.Errorf("__complete %q prints %q raw to the shell:\n%q", args, got[i], got)
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("__complete %q does not offer %q:\n%q", args, tt.want, got)
		}
	}
}
