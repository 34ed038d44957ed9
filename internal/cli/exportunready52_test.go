package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/store"
)

// A volume whose create or delete is not finished (a `volume create` killed before
// CreateVolume's answer was recorded: no external ID yet) made `export nomad` fail with "the
// exported spec does not validate for register (a volctl bug)". Named, it is refused saying
// what it is and what finishes it; under --all it is left out with a note, and an export with
// nothing left to write says so, and makes no directory.
func TestExportNomadOfAVolumeNotReadySaysWhy(t *testing.T) {
	for _, c := range []struct {
		state store.VolumeState
		want  string
	}{
		{store.VolumeCreating, "is being created, or its create was cut short: it has no storage ID (external_id) for Nomad to register yet"},
		{store.VolumeDeleting, "is being deleted, or its delete was cut short: there is nothing to hand over"},
	} {
		t.Run(string(c.state), func(t *testing.T) {
			h := newCLIHarness(t)
			exportVolume(t, h)
			updateStore(t, h, func(tx *store.Tx) error {
				v, err := tx.Volumes().Get("db")
				if err != nil {
					return err
				}
				v.State = c.state
				if c.state == store.VolumeCreating {
					v.ExternalID = ""
				}
				return tx.Volumes().Update(&v)
			})
			_, _, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.Volumes = []string{"db"} })
			if err == nil || !strings.Contains(err.Error(), `volume "db" `+c.want) || strings.Contains(err.Error(), "volctl bug") {
				t.Fatalf("export of a volume %s: %v; want it refused saying %q", c.state, err, c.want)
			}
			var dir string
			stdout, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.All, o.NoPluginJob = true, true; dir = o.OutDir })
			if err != nil {
				t.Fatalf("export --all beside a volume %s: %v", c.state, err)
			}
			if stdout != "" || !strings.Contains(stderr, `Note: volume "db" is not exported: `+c.want) || !strings.Contains(stderr, "Note: nothing to export") {
				t.Errorf("export --all beside a volume %s:\nstdout %q\nstderr %q\nwant the volume left out and nothing written, each said", c.state, stdout, stderr)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("export --all with nothing to write made %s (%v)", dir, err)
			}
		})
	}
}
