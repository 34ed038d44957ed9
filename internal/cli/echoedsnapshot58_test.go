package cli

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// snapshotEchoingSecret is a CLI harness whose plugin echoes the secrets CreateSnapshot is
// sent into the snapshot ID it answers (a hostile plugin), with volume "db" of secret and its
// snapshot name made: the ID, checked to hold the secret. While deleteDown is set, the plugin
// answers DeleteSnapshot UNAVAILABLE.
func snapshotEchoingSecret(t *testing.T, secret, name string, deleteDown *atomic.Bool) (*cliHarness, string) {
	t.Helper()
	echo := csitest.EchoSecretsIntoSnapshotIDs(deleteDown)
	h := newCLIHarnessServing(t, csitest.WithInterceptor(echo))
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	sn, err := h.e.CreateSnapshot(h.ctx, "db", name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sn.ID, secret) {
		t.Fatalf("the plugin did not echo the secret into the snapshot ID %q (harness)", sn.ID)
	}
	return h, sn.ID
}

// A plugin echoed the volume's secret into a snapshot's ID; `snapshot list` shows the ID
// scrubbed, and the user gives it so to `snapshot delete`, which finds no such snapshot and
// asked "did you mean ...?" naming the recorded ID whole, secret and all (found by review 58).
// The near IDs are scrubbed as the list scrubs them.
func TestSnapshotDeleteNamesNearIDsScrubbed(t *testing.T) {
	const secret = "pw58snapzz"
	h, id := snapshotEchoingSecret(t, secret, "nightly-backup-of-db-2026-12-05", new(atomic.Bool))
	shown := strings.Replace(id, secret, "[REDACTED]", 1)
	code, out, errOut := h.runReported("volume", "snapshot", "delete", "mem", shown, "--yes")
	if code != 0 || !strings.Contains(out, "did you mean") {
		t.Fatalf("snapshot delete %q: exit %d; want it not found, with the near IDs:\n%s%s", shown, code, out, errOut)
	}
	if strings.Contains(out+errOut, secret) || !strings.Contains(out, `did you mean "`+shown+`"?`) {
		t.Errorf("snapshot delete %q names the near ID otherwise than scrubbed:\nstdout: %s\nstderr: %s", shown, out, errOut)
	}
}

// `snapshot deregister PLUGIN NAME` warns that the snapshot is forgotten, not deleted, naming
// its recorded ID, into which the plugin echoed the volume's secret: printed whole on stderr,
// where plugin and volume deregister scrub their warnings (found by review 58).
func TestSnapshotDeregisterWarnsScrubbed(t *testing.T) {
	const secret = "pw58dereg-q7"
	h, _ := snapshotEchoingSecret(t, secret, "nightly", new(atomic.Bool))
	code, out, errOut := h.runReported("volume", "snapshot", "deregister", "mem", "nightly", "--yes")
	if code != 0 || !strings.Contains(errOut, "Warning: snapshot") {
		t.Fatalf("snapshot deregister mem nightly: exit %d; want it done, with its warning:\n%s%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, secret) || !strings.Contains(errOut, "[REDACTED]") {
		t.Errorf("snapshot deregister mem nightly prints the secret the plugin echoed into the snapshot ID:\nstdout: %s\nstderr: %s", out, errOut)
	}
}

// The volume whose secret the plugin echoed into its snapshot's ID is deregistered (the
// snapshot's record still holds the value, so it is still scrubbed), and a delete of the
// snapshot is cut short, left for reconcile. `volctl reconcile` finishes it, which takes the
// last record holding the value out of the state, then printed its report, "snapshot ...
// deleted", scrubbed with the values the state held after the pass: the secret whole (found by
// review 58). A value a command took out of the state stays scrubbed in what it prints.
func TestSecretLeftDuringACommandStaysScrubbedInWhatItPrints(t *testing.T) {
	const secret = "pw58recon-k2"
	var down atomic.Bool
	h, _ := snapshotEchoingSecret(t, secret, "nightly", &down)
	if _, _, err := h.e.DeregisterVolumeReleasing(h.ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	code, out, errOut := h.runReported("volume", "snapshot", "delete", "mem", "nightly", "--yes")
	if code == 0 || strings.Contains(out+errOut, secret) {
		t.Fatalf("snapshot delete while the plugin is down: exit %d; want it failed, the ID scrubbed:\n%s%s", code, out, errOut)
	}
	down.Store(false)
	for _, args := range [][]string{{"reconcile"}, {"events"}} {
		code, out, errOut = h.runReported(args...)
		if strings.Contains(out+errOut, secret) {
			t.Errorf("%s: exit %d, prints the secret the plugin echoed into the snapshot ID:\nstdout: %s\nstderr: %s", args[0], code, out, errOut)
		}
		if args[0] == "reconcile" && !strings.Contains(out, "deleted") {
			t.Fatalf("reconcile did not finish the snapshot delete: exit %d\n%s%s", code, out, errOut)
		}
	}
}
