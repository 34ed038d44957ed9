package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestNomadRegisterForcedPastAnOwedUnpublishNoteShowsNoSecretInTheNode: volume db is recorded
// attached, with no claim, to a node whose ID (NodeGetInfo's answer, data a plugin returned)
// a hostile plugin made of volume vault's secret. `volctl nomad register db --force` notes
// the attachment it handed over (forcedPastNote in internal/cli/nomad.go) with the node ID
// printed whole on stderr: the note is not scrubbed of the state's secrets, as the handover's
// other notes that word a volume's record are (scrubbedNote) and as docs/architecture.md
// ("State: Secrets") promises of the node a plugin named. Correct behaviour: the note shows
// [REDACTED] where the secret was.
// Found by helper review78 (secrets).
func TestNomadRegisterForcedPastAnOwedUnpublishNoteShowsNoSecretInTheNode(t *testing.T) {
	const secret = "node-s3cret-SENTINEL-7801"
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "vault", Name: "vault", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets:      spec.Secrets{"token": secret}}); err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	updateStore(t, h, func(tx *store.Tx) error {
		return tx.Stagings().Put(&store.Staging{VolumeID: "db", PluginID: "hp", NodeID: secret, ControllerPublished: true})
	})
	ios, _, out, errOut := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, Force: true}); err != nil {
		t.Fatalf("handover with --force: %v", err)
	}
	if !strings.Contains(errOut.String(), "ControllerUnpublishVolume") {
		t.Fatalf("precondition: the forced handover notes the owed unpublish:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if strings.Contains(out.String()+errOut.String(), secret) {
		t.Errorf("nomad register --force prints the secret a plugin echoed into the node ID it is attached to:\nstdout: %s\nstderr: %s", out, errOut)
	}
}

// TestProgressLineShowsNoSecretInTheLockHoldersCommand: a claim on a terminal waiting for
// volume db's lock draws "waiting for the lock on volume "db" (held by pid N: COMMAND)" on
// stderr, COMMAND read from /proc/N/cmdline (store.holderOf: the words up to the first flag).
// Those words may be a secret the state holds: a `volctl snapshot delete mem ID` whose ID a
// plugin made of volume vault's secret, or (as here) any process whose arguments carry it. The
// progress line (internal/cli/progress.go, progress.draw; its step from engine locks.go await)
// escapes them but does not scrub them, so the secret is drawn on the terminal, redrawn every
// tick, while the same words in the wait's final error are scrubbed (Factory.RedactError) and
// every other output masks the value. Correct behaviour: the progress line is scrubbed of the
// state's secrets as what the command prints is (or the holder's words are scrubbed where the
// engine words the step).
// Found by helper review78 (secrets).
func TestProgressLineShowsNoSecretInTheLockHoldersCommand(t *testing.T) {
	const secret = "holder-s3cret-SENTINEL-7802"
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Fatalf("flock(1) not found: the test holds the volume's lock through it, as another process")
	}
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "vault", Name: "vault", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets:      spec.Secrets{"token": secret}}); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(h.state, "locks", "volume-db.lock")
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("no lock file for volume db: %v", err)
	}
	// flock LOCK env SNAPSHOT=SECRET sleep 120: its command line up to the first flag holds
	// the secret, as a `volctl snapshot delete mem SECRET-ID` would.
	stderr := claimBehindALockHolder(t, h, lock, exec.Command(bin, lock, "env", "SNAPSHOT="+secret, "sleep", "120"), 300)
	if !strings.Contains(stderr, "waiting for the lock") || !strings.Contains(stderr, "flock") {
		t.Fatalf("precondition: no progress line naming the lock's holder: %q", stderr)
	}
	if strings.Contains(stderr, secret) {
		i := strings.Index(stderr, "waiting")
		line, _, _ := strings.Cut(stderr[i:], "\r")
		t.Errorf("the progress line draws the state's secret, in the lock holder's command line, on the terminal:\n%q", line)
	}
}

// claimBehindALockHolder starts holder (flock(1) holding lock, the lock of volume db, in a
// process group of its own, killed when t ends), waits until it holds it, then claims db for
// alloc a1 on a terminal width cells wide for 1.5 s, which must fail waiting for the lock: what
// the claim wrote on stderr (its progress line).
func claimBehindALockHolder(t *testing.T, h *cliHarness, lock string, holder *exec.Cmd, width int) string {
	t.Helper()
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
		_ = holder.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		fi, err := os.Stat(lock)
		if err == nil && slices.ContainsFunc(store.FlockHolders(fi, ""), func(hd store.LockHolder) bool { return hd.Pid == holder.Process.Pid }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flock(1) does not hold %s", lock)
		}
	}
	ios, _, _, errOut := iostreams.Test()
	ios.SetTTY(false, false, true)
	ios.SetWidth(width)
	ctx, cancel := context.WithTimeout(h.ctx, 1500*time.Millisecond)
	defer cancel()
	if err := volumeClaimRun(ctx, &VolumeClaimOptions{IO: ios, Engine: h.engine, VolumeID: "db", Alloc: "a1"}); err == nil {
		t.Fatal("the claim was made while another process held the volume's lock")
	}
	return errOut.String()
}
