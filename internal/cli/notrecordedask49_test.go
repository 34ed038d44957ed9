package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A destructive command on a volume the state dir does not record asked on the terminal
// whether to delete it (and its data), deregister it or detach it, and only after a "yes" said
// it was not found; the snapshot commands so of a plugin not registered. It says so without asking, exit 1 as after the question, naming the ID
// likely meant; a recorded volume is still asked about, and so is every volume where the state
// dir holds no database yet (TestDestructiveCommandsConfirm), which the look does not create.
func TestDestructiveCommandsOnAVolumeNotRecordedDoNotAsk(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	for _, c := range []struct {
		name     string
		new      func(*Factory) *cobra.Command
		args     []string
		notFound string // the error for the first arg, which differs from a recorded ID in case
	}{
		{"volume delete", func(f *Factory) *cobra.Command { return newCmdVolumeDelete(f, nil) }, []string{"Db"}, `delete volume "Db": volume "Db" not found (did you mean "db"?)`},
		{"volume deregister", func(f *Factory) *cobra.Command { return newCmdVolumeDeregister(f, nil) }, []string{"Db"}, `deregister volume "Db": volume "Db" not found (did you mean "db"?)`},
		{"volume deregister --force", func(f *Factory) *cobra.Command { return newCmdVolumeDeregister(f, nil) }, []string{"Db", "--force"}, `deregister volume "Db": volume "Db" not found`},
		{"volume detach", func(f *Factory) *cobra.Command { return newCmdVolumeDetach(f, nil) }, []string{"Db"}, `detach "Db": volume "Db" not found`},
		{"volume detach --force", func(f *Factory) *cobra.Command { return newCmdVolumeDetach(f, nil) }, []string{"Db", "--force"}, `detach "Db": volume "Db" not found`},
		// Through a plugin not registered, the snapshot commands likewise.
		{"volume snapshot delete", func(f *Factory) *cobra.Command { return newCmdVolumeSnapshotDelete(f, nil) }, []string{"Mem", "snap-1"},
			`delete snapshot "snap-1" of plugin "Mem": plugin "Mem" is not registered (volctl plugin register) (did you mean "mem"?)`},
		{"volume snapshot deregister", func(f *Factory) *cobra.Command { return newCmdVolumeSnapshotDeregister(f, nil) }, []string{"Mem", "snap-1"},
			`deregister snapshot "snap-1" of plugin "Mem": plugin "Mem" is not registered`},
		// And plugin deregister --force of a plugin not registered: it asked its question of a
		// typo, and said "not registered" only after a yes. Found by helper review71.
		{"plugin deregister --force", func(f *Factory) *cobra.Command { return newCmdPluginDeregister(f, nil) }, []string{"Mem", "--force"},
			`deregister plugin "Mem": plugin "Mem" is not registered`},
	} {
		recorded := strings.ToLower(c.args[0])
		for _, id := range []string{c.args[0], recorded} {
			t.Run(c.name+"/"+id, func(t *testing.T) {
				ios, in, _, errOut := iostreams.Test()
				ios.SetTTY(true, true, true)
				in.WriteString("n\n")
				f := NewFactory(ios)
				f.stateDirFlag = h.state
				defer f.Close()
				args := append([]string{id}, c.args[1:]...)
				err := runCmd(t, c.new(f), args...)
				asked := strings.Contains(errOut.String(), "[y/N]")
				if id == recorded {
					if !asked || ExitCode(err) != ExitDeclined {
						t.Fatalf("a recorded volume: asked %v, exit %d (%v); want the question, declined", asked, ExitCode(err), err)
					}
					return
				}
				if asked || ExitCode(err) != ExitError || err == nil || !strings.Contains(err.Error(), c.notFound) {
					t.Fatalf("a volume not recorded: asked %v (stderr %q), exit %d, err %v; want no question, exit 1, %q", asked, errOut, ExitCode(err), err, c.notFound)
				}
			})
		}
	}
	if _, err := h.e.Volume(h.ctx, "db"); err != nil {
		t.Fatalf("the recorded volume after the declined commands: %v", err)
	}
}
