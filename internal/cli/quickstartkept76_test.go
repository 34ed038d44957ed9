package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
)

// TestQuickstartKeptUnderSudoInterruptedAdvisesSudo: `sudo volctl quickstart --keep`, stopped
// by Ctrl-C once its plugin serves, keeps its directory (root's, 0700) and ends with the error
// "quickstart: interrupted; kept DIR, ...; `volctl --state-dir DIR/state status` shows what is
// there". Its stdout's advice for the same directory reads `sudo volctl --state-dir ... status`
// (ranBySudo, TestQuickstartKeptUnderSudoAdvisesCommandsItsUserCanRun), but the error's line,
// the last thing the user reads, drops the sudo: run by the user who ran sudo, as printed, it
// fails with "permission denied" on root's state dir. cleanedUp.Error names volctl as
// quickstart.self without the sudo the kept advice adds. Correct: the error's command carries
// sudo as the stdout's does.
// Found by helper review76 (quickstart).
func TestQuickstartKeptUnderSudoInterruptedAdvisesSudo(t *testing.T) {
	parent := hostpathtest.ShortDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ios, _, out, errOut := iostreams.Test()
	err := quickstartRun(ctx, &QuickstartOptions{IO: ios, TempDir: parent, Keep: true, Sudo: true,
		mounter: &hostpathtest.FakeMounter{},
		afterStep: func(step int) {
			if step == 4 { // the plugin registered, the volume created
				cancel()
			}
		}})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v, want an interrupt\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, "volctl-quickstart-*"))
	if len(dirs) != 1 {
		t.Fatalf("kept dirs = %v, want one\nstdout:\n%s", dirs, out)
	}
	state := filepath.Join(dirs[0], "state")
	look := shellquote.Flag("--state-dir", state) + " status"
	if !strings.Contains(out.String(), "sudo volctl "+look) {
		t.Fatalf("stdout lacks the sudo advice %q (precondition):\n%s", "sudo volctl "+look, out)
	}
	if !strings.Contains(err.Error(), look) {
		t.Fatalf("the error names no command to look at the kept state (want %q):\n%v", look, err)
	}
	if !strings.Contains(err.Error(), "`sudo volctl "+look+"`") {
		t.Errorf("run through sudo (what it kept is root's, 0700), quickstart --keep interrupted advises, in its error, a command without sudo, which its user's shell cannot run (stdout says `sudo volctl %s`):\n%v",
			look, err)
	}
}

// TestQuickstartKeptWithAFailedReleaseAdvisesTheKeptState: `volctl quickstart --keep` whose
// release fails (the claim's target busy: NodeUnpublishVolume answers EBUSY), and whose
// cleanup's own release then fails too, keeps its directory with the claim left in its state
// ("unpublishing"). stdout says the directory is kept and to look at it with `volctl
// --state-dir DIR/state ...`; but the errors printed after it (the cleanup's on stderr and the
// step's, the last line) advise `volctl reconcile` and `volctl volume detach demo --force
// --yes` bare: pasted, they act on the user's own state dir (dropping the claims of the user's
// own volume "demo", if there is one), not on the kept state where the claim is. The cleanup
// wraps its errors (cleanedUp) only when the directory is gone or kept with every claim
// released; with a claim left, the raw errors go out, naming no state dir. Correct: each
// volctl command those errors advise names the kept state dir (--state-dir DIR/state).
// Found by helper review76 (quickstart).
func TestQuickstartKeptWithAFailedReleaseAdvisesTheKeptState(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := hostpathtest.MountDir(t)
	ios, _, out, errOut := iostreams.Test()
	m := &busyUnmounts{}
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, mounter: m, Keep: true,
		afterStep: func(step int) {
			if step == 7 { // the claim published, its status shown: the release comes next
				m.armed.Store(true)
			}
		}})
	if err == nil {
		t.Fatalf("quickstart --keep whose unmounts fail succeeded\nstdout:\n%s", out)
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, "volctl-quickstart-*"))
	if len(dirs) != 1 || !strings.Contains(out.String(), "Kept "+dirs[0]) {
		t.Fatalf("kept dirs = %v, want the one stdout says is kept\nstdout:\n%s", dirs, out)
	}
	state := filepath.Join(dirs[0], "state")
	advised := regexp.MustCompile("`volctl [^`]*`")
	var n int
	for _, said := range []string{errOut.String(), err.Error()} {
		for _, cmd := range advised.FindAllString(said, -1) {
			n++
			if !strings.Contains(cmd, shellquote.Flag("--state-dir", state)) {
				t.Errorf("quickstart --keep kept %s with its claim left in it, yet advises %s, which acts on the user's own state dir, not the kept one:\n%s",
					dirs[0], cmd, said)
			}
		}
	}
	if n == 0 {
		t.Fatalf("no volctl command advised (precondition: the release's error names one)\nerr: %v\nstderr:\n%s", err, errOut)
	}
}
