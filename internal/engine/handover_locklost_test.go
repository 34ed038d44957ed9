package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A volume's lock file removed by hand while `volctl nomad release` asks Nomad, under the
// volume's lock, whether it still has the volume: a second volctl takes a new file at the
// path and registers the volume in Nomad again (`volctl nomad register`, a re-registration
// Nomad answers OK). Before, the first, told 404 by its question from before that
// registration, removed the mark anyway: Nomad had the volume and volctl claimed it locally
// too. The take-back removes the mark only while its lock is still held, and stops instead,
// naming the lock file and the command to run again; the mark, and the refusal of local
// claims, stay. The same when the state dir's whole locks/ is replaced by a new one.
func TestLockFileDeletedWhileTakeBackAsksNomadKeepsTheMark(t *testing.T) {
	t.Parallel()
	for name, lose := range map[string]func(h *harness) (*Engine, string){
		"lock file removed":  func(h *harness) (*Engine, string) { return h.removeLockThenOpenAnother("db") },
		"locks dir replaced": func(h *harness) (*Engine, string) { return h.replaceLocksDirThenOpenAnother("db") },
	} {
		t.Run(name, func(t *testing.T) { takeBackWhileLockLost(t, lose) })
	}
}

// replaceLocksDirThenOpenAnother moves the state dir's locks/ aside and makes a new, empty one,
// as a cleanup of the state dir might, and opens a second engine on the state dir, as another
// volctl process; it returns the engine and the path of volume vol's lock file.
func (h *harness) replaceLocksDirThenOpenAnother(vol string) (*Engine, string) {
	h.t.Helper()
	dir := filepath.Join(h.dir, lockDir)
	if err := os.Rename(dir, dir+".old"); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		h.t.Fatal(err)
	}
	second, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { second.Close() })
	return second, filepath.Join(dir, "volume-"+vol+".lock")
}

func takeBackWhileLockLost(t *testing.T, lose func(h *harness) (*Engine, string)) {
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	if _, err := h.e.HandOver(h.ctx, "db", to, false, nil); err != nil {
		t.Fatal(err)
	}
	asking, answer := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := h.e.TakeBack(h.ctx, "db", func(HandoverInfo) (string, error) {
			close(asking)
			<-answer
			return "Nomad answered 404 (asked before the second volctl's registration)", nil
		}, nil)
		done <- err
	}()
	<-asking
	second, lockPath := lose(h)
	if _, err := second.HandOver(h.ctx, "db", to, false, func(context.Context, bool, VolumeInfo) (Registered, error) {
		return Registered{OK: true, Index: 7}, nil
	}); err != nil {
		close(answer)
		t.Fatalf("the second volctl's registration: %v", err)
	}
	close(answer)
	err := <-done
	wantLockLost(t, "the take-back", err, lockPath, "db")
	if err != nil && !strings.Contains(err.Error(), "volctl nomad release db") {
		t.Errorf("the take-back's error = %q; want it to name `volctl nomad release db` to run again", err)
	}
	hs, herr := h.e.Handovers(h.ctx, "db")
	if herr != nil || len(hs) != 1 || hs[0].Index != 7 {
		t.Fatalf("handover marks after the take-back = %+v, %v; want the second volctl's, index 7 (Nomad has the volume)", hs, herr)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"}); !errors.Is(err, ErrConflict) {
		t.Errorf("a local claim of the volume Nomad has: %v; want it refused (handed over)", err)
	}
}

// The same on the hand-over's way: the first registration of a volume on its way to Nomad, the
// lock file removed, and a second volctl registers it again (its mark now a re-registration),
// which Nomad answers OK; then Nomad refuses the first's. Before, the first took the mark back
// ("Nomad did not take the volume") though Nomad had the second's registration: local claims
// were admitted beside Nomad's. The first writes nothing once its lock is lost: the mark stays
// as the second left it, settled at its index.
func TestLockFileDeletedWhileHandOverRegistersKeepsTheOtherRegistration(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	lockPath, err := h.handOverBesideAnother(
		func() (Registered, error) {
			return Registered{Undo: true}, errors.New("Nomad refused the registration: 400 Bad Request")
		},
		func(first bool) (Registered, error) {
			if first {
				t.Error("the second volctl's registration was told it is the first; want a re-registration (the first's mark stands)")
			}
			return Registered{OK: true, Index: 9}, nil
		})
	wantLockLost(t, "the first hand-over", err, lockPath, "db")
	hs, herr := h.e.Handovers(h.ctx, "db")
	if herr != nil || len(hs) != 1 || hs[0].Unsettled || hs[0].Index != 9 {
		t.Fatalf("handover marks after the first hand-over = %+v, %v; want the second volctl's, settled at index 9 (Nomad has the volume)", hs, herr)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"}); !errors.Is(err, ErrConflict) {
		t.Errorf("a local claim of the volume Nomad has: %v; want it refused (handed over)", err)
	}
}

// The same when the second volctl's registration ends without Nomad saying how (its mark
// unsettled: Nomad may yet apply it) and Nomad then answers the first's OK: before, the first
// recorded its outcome over the second's and settled the mark, so that `volctl nomad release`
// took Nomad's 404 as its word while the second registration could still be applied. The first
// records nothing once its lock is lost.
func TestLockFileDeletedWhileHandOverRegistersKeepsTheOtherOutcome(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	lockPath, err := h.handOverBesideAnother(
		func() (Registered, error) { return Registered{OK: true, Index: 3}, nil },
		func(bool) (Registered, error) { return Registered{InFlight: true}, nil })
	wantLockLost(t, "the first hand-over", err, lockPath, "db")
	if hs, herr := h.e.Handovers(h.ctx, "db"); herr != nil || len(hs) != 1 || !hs[0].Unsettled {
		t.Fatalf("handover marks after the first hand-over = %+v, %v; want the second volctl's, unsettled (its registration may yet be applied)", hs, herr)
	}
}

// handOverBesideAnother makes volume db and hands it over to Nomad for the first time, its
// registration held until a second volctl, after db's lock file is removed, has handed it
// over again; the first's registration then ends as first says, the second's as second. It
// returns the lock file's path and the first hand-over's error.
func (h *harness) handOverBesideAnother(first func() (Registered, error), second func(first bool) (Registered, error)) (lockPath string, err error) {
	h.t.Helper()
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	registering, answer := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := h.e.HandOver(h.ctx, "db", to, false, func(context.Context, bool, VolumeInfo) (Registered, error) {
			close(registering)
			<-answer
			return first()
		})
		done <- err
	}()
	<-registering
	other, lockPath := h.removeLockThenOpenAnother("db")
	if _, err = other.HandOver(h.ctx, "db", to, false, func(_ context.Context, isFirst bool, _ VolumeInfo) (Registered, error) {
		return second(isFirst)
	}); err != nil {
		close(answer)
		h.t.Fatalf("the second volctl's registration: %v", err)
	}
	close(answer)
	return lockPath, <-done
}
