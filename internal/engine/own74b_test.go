package engine

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A registration again with other secrets and a larger capacity_min grows the volume first
// (expandRegistered), and the expansion's intent commit now writes the spec's secrets into the
// volume's record (recordSecretsSent), before ControllerExpandVolume is sent. When the plugin
// refuses that expansion outright (OUT_OF_RANGE: it did nothing), the intent is cleared
// (expansionAnswered) and the registration fails, never reaching its own commit, yet the
// record keeps the new secrets: the refused registration replaced the volume's working
// credential (scrubbed from the log as "let go", every later claim and unpublish sent with
// the secrets of a registration that was refused).
//
// Correct behaviour: a registration that fails changes nothing of the record: a refusal the
// plugin answered puts the record's secrets back (or they are recorded with the intent only
// and kept only while an expansion whose answer was lost stays pending).
// Found by helper review74 (own2).
func TestRegistrationWhoseExpansionIsRefusedKeepsTheRecordedSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("db")
	sv.Secrets = spec.Secrets{"token": "working-cred"}
	v := h.create(sv)
	if v.CapacityBytes <= 0 || v.CapacityBytes >= 2<<30 {
		t.Fatalf("premise: volume db is created below 2 GiB (%d bytes)", v.CapacityBytes)
	}
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Code: codes.OutOfRange, Message: "the pool cannot hold 2GiB"})

	re := sv
	re.ExternalID = v.ExternalID
	re.CapacityMin = 2 << 30
	re.Secrets = spec.Secrets{"token": "mistyped-cred"}
	_, err := h.e.RegisterVolume(h.ctx, re)
	if err == nil {
		t.Fatalf("premise: the registration whose expansion the plugin refused fails; it succeeded")
	}
	if got := h.volumeInfo("db"); got.ExpansionPending != 0 {
		t.Fatalf("premise: the refused expansion is not left pending (pending %d): %v", got.ExpansionPending, err)
	}
	if got := h.volumeRow("db").Secrets["token"]; got != "working-cred" {
		t.Errorf("the registration failed (%v), but volume db's recorded secret is now %q, the refused spec's, where it was %q: "+
			"a failed registration changed the record", err, got, "working-cred")
	}
}

// A forced detach warns of a target that a process still uses (forceUnmount: a plain unmount
// answered EBUSY, waited out, then done lazily, "which is warned of: it stays mounted for that
// process", volctl-volume-detach(1)). But the wait and the warning are skipped when anything is
// mounted below the target (mountsBelow): the plain unmount's EBUSY is then put down to that
// mount, and the target is unmounted lazily in silence, though a process's working directory
// is in it, and it keeps reading and writing the volume after the detach said the claim was
// freed. Correct: a target in use is warned of whatever else is mounted below it (the mounts
// below unmounted first, or the busy check made otherwise).
// Found by helper review74 (own2).
func TestForcedDetachOfABusyTargetWithAMountBelowItSaysItIsStillInUse(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	target := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}).TargetPath
	if mounted, err := (kernelMounts{}).MountsUnder(target); err != nil || len(mounted) == 0 {
		t.Fatalf("the claim's target %s is not a mount (%v, %v): the test needs a real mount", target, mounted, err)
	}
	below := filepath.Join(target, "cache")
	if err := os.MkdirAll(below, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", below, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs below the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(below, unix.MNT_DETACH) })
	if pid, warnings, said := busyForcedDetach(t, h, target); !said {
		t.Errorf("forced detach of volume v whose target %s a running process (pid %d) has as its working directory, with a tmpfs mounted below it at %s: warnings %q; "+
			"want a warning naming the target and that it is still in use (the lazy unmount leaves it mounted for that process)",
			target, pid, below, warnings)
	}
}
