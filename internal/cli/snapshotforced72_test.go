package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestSnapshotOfAForceDeregisteredPluginIsAskedForAtATerminal: `plugin deregister --force`
// keeps a plugin's snapshot records and the way to delete them (volctl dials the recorded
// sockets), and `snapshot list --plugin` shows them; at a terminal, `volume snapshot delete` and
// `deregister` of one looked the plugin up before their question and ended at once, exit 1,
// "plugin "mem" is not registered (volctl plugin register)", where --yes deleted. They ask, and
// do it on "y". Found by helper review72.
func TestSnapshotOfAForceDeregisteredPluginIsAskedForAtATerminal(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "v", spec.SingleNodeWriter)
	for _, name := range []string{"keep", "keep2", "keep3"} {
		if code, out, errOut := h.runReported("volume", "snapshot", "create", "v", name); code != 0 {
			t.Fatalf("snapshot create: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	}
	if code, out, errOut := h.runReported("volume", "deregister", "v", "--yes"); code != 0 {
		t.Fatalf("volume deregister: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := h.runReported("plugin", "deregister", "mem", "--force", "--yes"); code != 0 {
		t.Fatalf("plugin deregister --force: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The premise: the engine deletes such a snapshot, as the doc says (here with --yes).
	if code, out, errOut := h.runReported("volume", "snapshot", "delete", "mem", "keep3", "--yes"); code != 0 {
		t.Fatalf("premise: snapshot delete --yes of a force-deregistered plugin's snapshot: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, c := range []struct{ args []string }{
		{[]string{"volume", "snapshot", "delete", "mem", "keep"}},
		{[]string{"volume", "snapshot", "deregister", "mem", "keep2"}},
	} {
		ios, in, out, errOut := iostreams.Test()
		ios.SetTTY(true, true, true)
		in.WriteString("y\n")
		f := NewFactory(ios)
		root := NewRootCmd(f)
		root.SetArgs(append([]string{"--state-dir", h.state}, c.args...))
		err := root.ExecuteContext(h.ctx)
		err = f.RedactError(h.ctx, err)
		f.Close()
		asked := strings.Contains(errOut.String(), "[y/N]")
		t.Logf("%s at a terminal: asked %v, exit %d, err %v\nstdout %q\nstderr %q", strings.Join(c.args, " "), asked, ExitCode(err), err, out, errOut)
		if !asked || err != nil {
			t.Errorf("`volctl %s` at a terminal, of a snapshot volctl records through plugin mem (deregistered with --force, its records and the way to delete them kept): "+
				"asked %v, exit %d, %v; want the question asked and the command done on \"y\"", strings.Join(c.args, " "), asked, ExitCode(err), err)
		}
	}
}
