package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// runGivenStateDir runs volctl with args on engine e, given --state-dir state as a user types
// it (so that stderr carries stateDirAdvice), and reports as main does: the error scrubbed
// (RedactError), then written. It returns the exit status, stdout and stderr.
func runGivenStateDir(ctx context.Context, e *engine.Engine, state string, args ...string) (int, string, string) {
	ios, _, stdout, stderr := iostreams.Test()
	f := NewFactory(ios)
	f.engine = e
	root := NewRootCmd(f)
	root.SetArgs(append([]string{"--state-dir", state}, args...))
	code := f.Report(f.RedactError(ctx, root.ExecuteContext(ctx)))
	return code, stdout.String(), stderr.String()
}

// TestStateDirAdviceDoesNotUndoTheScrubOfASecretInItsPath: volume db's secrets hold
// username=kf9user, and the user's --state-dir lies under a directory of that name (a CSI
// username is often the Unix user's, and a state dir under their home). Everything volctl
// prints is scrubbed of the state's secret values (engine.Redactor; volume IDs and paths too:
// TestVolumeListMasksASecretInTheVolumesNames), so reconcile's problem of claim a1's covered
// target reads ".../[REDACTED]/state/publish/...". But stateDirAdvice inserts the state dir
// into the same line after that scrub ("then run `volctl --state-dir .../kf9user/state
// reconcile`"): the value the scrub hid a few words before is printed whole beside its marker,
// which says exactly what was masked. The dashboard (tui.advisedEngine: scrub, then advise) and
// the crash report's advice (crash.Advise) insert it after their scrub the same way. Correct:
// nothing inserted after the scrub shows a secret value; the inserted state dir is scrubbed as
// the rest of the line was (or the advice names the state dir another way).
// Found by helper review76 (secrets).
func TestStateDirAdviceDoesNotUndoTheScrubOfASecretInItsPath(t *testing.T) {
	ctx := context.Background()
	const secret = "kf9user"
	state, e := stateDirNamingASecret(t, secret)
	cl, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", cl.TargetPath, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	t.Cleanup(func() {
		_ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH)
		_, _ = e.Release(context.Background(), "db", "a1")
	})

	code, out, errOut := runGivenStateDir(ctx, e, state, "reconcile")
	shown := out + errOut
	// The precondition: reconcile names the covered target, its path scrubbed of the value,
	// and advises a volctl command, which carries the state dir given.
	if !strings.Contains(shown, "umount") || !strings.Contains(shown, "[REDACTED]") || !strings.Contains(errOut, "`volctl --state-dir ") {
		t.Fatalf("reconcile with claim a1's target covered: exit %d\nstdout:\n%s\nstderr:\n%s\nwant the covered target named, its path scrubbed, and advice carrying --state-dir (the precondition)", code, out, errOut)
	}
	if strings.Contains(shown, secret) {
		t.Errorf("reconcile --state-dir %s, volume db's secret username=%s:\nstdout:\n%s\nstderr:\n%s\n"+
			"the secret value the scrub masked in the target's path is printed whole in the advice inserted after the scrub", state, secret, out, errOut)
	}
}

// TestStateDirAdviceEscapesWhatItInserts: --state-dir refuses a control character
// (TestStateDirWithBlanksOrControlsIsRefused) and errors are written with theirs escaped
// (escapeLines), so that nothing volctl prints drives the terminal. A relative --state-dir is
// made absolute against the working directory, whose path is not checked; stateDirAdvice then
// inserts that path, shell-quoted but not escaped, into stderr after the escaping: run from a
// directory whose name holds an OSC sequence (an unpacked archive's, another user's in /tmp),
// `volctl --state-dir st volume claim db --alloc b` wrote the raw ESC ... BEL to the terminal
// in the advice "`volctl --state-dir '...' volume release db --alloc a1`", which sets the
// window title (or worse) and garbles the command the user is told to paste. Correct: what
// the rewrite inserts is escaped as the rest of the line is (or such a state dir refused).
// Found by helper review76 (secrets).
func TestStateDirAdviceEscapesWhatItInserts(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	const osc = "\x1b]0;owned\x07"
	cwd := filepath.Join(t.TempDir(), "d"+osc)
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())))
	e := openEngine(t, filepath.Join(cwd, "st"))
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	createSingleWriter(t, e, "db")
	claimUntilCleanup(t, e, "db", "a1")

	code, out, errOut := runGivenStateDir(ctx, e, "st", "volume", "claim", "db", "--alloc", "b")
	if code == ExitOK || !strings.Contains(errOut, "`volctl --state-dir ") {
		t.Fatalf("claim of db by b while a1 holds it single-node-writer: exit %d\nstdout:\n%s\nstderr:\n%q\nwant it refused, advising the release with --state-dir (the precondition)", code, out, errOut)
	}
	if strings.ContainsAny(errOut, "\x1b\x07") {
		t.Errorf("volume claim db --alloc b, --state-dir st in %q: stderr holds raw control characters:\n%q\nwant them escaped, as in every error volctl writes", cwd, errOut)
	}
}

// stateDirNamingASecret is an engine on a state dir under a directory named secret, the mem
// plugin registered (mounting) and volume db made with secret as its username: a state dir whose
// path holds one of the state's secret values.
func stateDirNamingASecret(t *testing.T, secret string) (string, *engine.Engine) {
	t.Helper()
	requireMount(t)
	state := filepath.Join(t.TempDir(), secret, "state")
	if err := os.MkdirAll(filepath.Dir(state), 0o700); err != nil {
		t.Fatal(err)
	}
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())))
	e := openEngine(t, state)
	ctx := context.Background()
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", Secrets: spec.Secrets{"username": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	return state, e
}
