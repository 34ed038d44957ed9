package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A claim on a terminal that waits for a volume's lock draws "waiting for the lock on volume
// "db" (held by pid N: COMMAND)" on stderr, COMMAND read from /proc/N/cmdline: another
// process's words (a volctl run on a spec file from a cloned repository, say). The line shows
// them escaped. Before, it wrote them raw, redrawn every tick: an OSC in the file's name
// retitled the window, a CSI cleared the screen.
func TestProgressLineEscapesTheLockHoldersCommand(t *testing.T) {
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) not found: the test holds the volume's lock through it, as another process")
	}
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	lock := filepath.Join(h.state, "locks", "volume-db.lock")
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("no lock file for volume db: %v", err)
	}
	dir, err := os.MkdirTemp("", "progress60")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The holder's command line names a file whose name holds an OSC (retitle the window) and a
	// CSI (clear the screen) sequence.
	evil := filepath.Join(dir, "db\x1b]0;pwned\x07\x1b[2J.hcl")
	if err := os.Symlink(lock, evil); err != nil {
		t.Fatal(err)
	}
	stderr := claimBehindALockHolder(t, h, lock, exec.Command(bin, evil, "sleep", "120"), 200)
	if !strings.Contains(stderr, "waiting for the lock") {
		t.Fatalf("no progress line for the lock wait: %q", stderr)
	}
	if i := strings.IndexAny(stderr, "\x1b\x07"); i >= 0 {
		line, _, _ := strings.Cut(stderr[strings.Index(stderr, "waiting"):], "\r")
		t.Errorf("the progress line writes the lock holder's command line raw to the terminal (%q at %d), redrawn every tick:\n%q", stderr[i], i, line)
	}
}

// A plugin answers CreateSnapshot with an ID holding a tab, which volctl takes (spec.ControlIn
// lets \t, \n and \r through). Completion lines are "VALUE\tdescription": such a value is not
// offered. Before, it was cut at the plugin's own tab, and "snap", an ID the plugin never gave
// (perhaps another snapshot's), was offered in front of snapshot delete.
func TestCompletionOffersNoValueCutAtItsTab(t *testing.T) {
	ctx := context.Background()
	e, _ := volumeOnSnapshotIDAnswering(t, "snap\tX")
	s, err := e.CreateSnapshot(ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatalf("CreateSnapshot answered with an ID holding a tab: %v", err)
	}
	if s.ID != "snap\tX" {
		t.Fatalf("snapshot recorded as %q: the test tests nothing", s.ID)
	}
	ios, _, out, _ := iostreams.Test()
	f := NewFactory(ios)
	f.completionTimeout = time.Hour
	root := NewRootCmd(f)
	root.SetArgs([]string{"__complete", "--state-dir", e.StateDir(), "volume", "snapshot", "delete", "mem", ""})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, line := range strings.Split(out.String(), "\n") {
		if v, _, _ := strings.Cut(line, "\t"); v == "snap" {
			t.Errorf("completion offers %q, which no snapshot has (the plugin's ID is %q):\n%q", v, s.ID, out.String())
		}
	}
}

type fullDisk60 struct{}

func (fullDisk60) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A plugin answers CreateSnapshot with an ID holding a newline (taken: spec.ControlIn lets it
// through). When the result line cannot be printed (a full disk), the error saying what was done
// quotes the ID, and the plugin's text starts no line of its own on stderr. Before, it was
// written with %s, and Report keeps an error's newlines: "Error: forged by the plugin" stood on
// a line of its own.
func TestUnprintedSnapshotCreateLetsThePluginStartNoLine(t *testing.T) {
	ctx := context.Background()
	_, eng := volumeOnSnapshotIDAnswering(t, "snap\nError: forged by the plugin")
	ios, _, _, errOut := iostreams.Test()
	ios.Out = fullDisk60{}
	err := snapshotCreateRun(ctx, &SnapshotCreateOptions{IO: ios, Engine: eng, VolumeID: "db", Name: "nightly"})
	if err == nil {
		t.Fatal("the result line was written to a full disk")
	}
	NewFactory(ios).Report(err)
	if strings.Contains(errOut.String(), "\nError: forged") {
		t.Errorf("a plugin's snapshot ID starts a line of its own on stderr:\n%s", errOut)
	}
}

// volumeOnSnapshotIDAnswering serves an in-memory plugin whose CreateSnapshot answers with the
// snapshot ID id, whatever it made, and creates volume db on it.
func volumeOnSnapshotIDAnswering(t *testing.T, id string) (*engine.Engine, func(context.Context) (*engine.Engine, error)) {
	t.Helper()
	answer := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateSnapshotResponse); ok && err == nil {
			r.Snapshot.SnapshotId = id
		}
		return resp, err
	}
	_, e, eng := serveMem(t, csitest.NewMemPlugin(csitest.DefaultMemConfig()), csitest.WithInterceptor(answer))
	if _, err := e.CreateVolume(context.Background(), spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	return e, eng
}
