package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/testproc"
)

// TestStatusReadsWhileAnotherVolctlMigrates: `volctl volume status` and `volctl status` while
// another volctl holds the state's open lock exclusive (a newer volctl migrating it, or one
// stopped mid-way) waited 30 s, then failed. They read the last committed state at once now
// (store.readMigrating), with a warning saying so; a claim still waits for the migration (store tests).
func TestStatusReadsWhileAnotherVolctlMigrates(t *testing.T) {
	t.Parallel()
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	f, err := os.OpenFile(filepath.Join(h.state, store.FileName)+"-lock", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h.e.Close()                  // the harness's own engine holds the lock shared
	testproc.LockExclusive(t, f) // once no child being started holds a copy of it
	for _, args := range [][]string{{"volume", "status", "db", "--jq", ".id"}, {"volume", "status", "--jq", ".[].id"}, {"status", "--jq", "if .volumes.total == 1 then \"db\" else . end"}} {
		code, out, errOut := h.runReported(args...)
		if code != ExitOK || strings.TrimSpace(out) != "db" || !strings.Contains(errOut, "another volctl is migrating the state database to a newer schema: shown as last committed before it") {
			t.Errorf("volctl %s while another volctl migrates: exit %d, stdout %q, stderr %q; want volume db read, and a warning that it is the state before the migration", strings.Join(args, " "), code, out, errOut)
		}
	}
}
