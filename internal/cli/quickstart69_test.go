package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
)

// quickstart --keep interrupted (Ctrl-C) while its claim's NodeStageVolume runs: the cleanup
// releases the claim (it does so with --keep too) and keeps the directory, but the error
// printed last is still the claim command's own note, "the claim is left controller-published,
// not published; `volctl reconcile` will finish publishing it, or `volctl volume release demo
// --alloc web-0` will undo it": the claim was gone, and those commands, without --state-dir,
// act on the user's own state dir (its volume "demo", if it has one), not the kept one. Found
// by helper review69.
func TestQuickstartKeepInterruptedAdvisesNothingOnTheUsersState(t *testing.T) {
	parent := hostpathtest.ShortDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ios, _, out, errOut := iostreams.Test()
	err := quickstartRun(ctx, &QuickstartOptions{IO: ios, TempDir: parent, Keep: true,
		mounter: &cancelOnMount{FakeMounter: &hostpathtest.FakeMounter{}, cancel: cancel}})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v, want an interrupt\nstdout:\n%s", err, out)
	}
	for _, w := range leftoverAdvice {
		if strings.Contains(err.Error(), w) {
			t.Errorf("quickstart --keep, interrupted at the claim, released the claim in its cleanup, yet its error says %q (a command for the user's own state dir, not the kept one):\n%v\nstderr: %s",
				w, err, errOut)
		}
	}
}

// busyUnmounts is the kernel's mounter whose unmounts fail with EBUSY once armed (a shell
// whose working directory is the claim's target, an indexer holding a file open in it): the
// release step fails, and so does the cleanup's own release of the claim. The cleanup's safety
// net (hostpath.UnmountAll, lazily) still unmounts everything and the directory goes.
type busyUnmounts struct {
	hostpath.SystemMounter
	armed atomic.Bool
}

func (m *busyUnmounts) Unmount(target string) error {
	if m.armed.Load() {
		return &os.PathError{Op: "unmount", Path: target, Err: unix.EBUSY}
	}
	return m.SystemMounter.Unmount(target)
}

// When quickstart's cleanup fails in part (here its release of the claim) but still removes
// its directory ("Cleaned up: DIR is gone."), the error printed last was the step's own, not
// marked as moot: "(the claim is left ... for `volctl reconcile`)", and the cleanup's error,
// printed before it, said the same. The claim, its state dir and plugin are gone; `volctl
// reconcile` run as told acts on the user's own state dir. cleanedUp wrapped the error only
// when the cleanup had no error at all. Each now says that what it says to run no longer
// applies, as a step's error after a clean cleanup does (the failure itself kept: what
// failed). Found by helper review69.
func TestQuickstartPartlyFailedCleanupSaysItsAdviceNoLongerApplies(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := hostpathtest.MountDir(t)
	ios, _, out, errOut := iostreams.Test()
	m := &busyUnmounts{}
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, mounter: m,
		afterStep: func(step int) {
			if step == 7 { // the claim published, its status shown: the release comes next
				m.armed.Store(true)
			}
		}})
	if err == nil {
		t.Fatalf("quickstart whose unmounts fail succeeded\nstdout:\n%s", out)
	}
	if !strings.Contains(errOut.String(), "Cleaned up: ") {
		t.Fatalf("stderr = %q, want the directory removed (Cleaned up:)", errOut)
	}
	assertCleanedUp(t, parent)
	// What the user reads after "Cleaned up: DIR is gone.": the cleanup's error and the step's.
	_, after, _ := strings.Cut(errOut.String(), "Cleaned up: ")
	i := strings.Index(after, "Error: ")
	if i < 0 {
		t.Fatalf("stderr after %q holds no error of the cleanup's: %q", "Cleaned up: ", after)
	}
	errLine, _, _ := strings.Cut(after[i:], "\n")
	for _, said := range []string{errLine, err.Error()} {
		for _, w := range []string{"volctl reconcile", "the claim is left", "volctl volume release", "volctl volume detach"} {
			if strings.Contains(said, w) && !strings.Contains(said, "no longer applies") {
				t.Errorf("after removing its directory, quickstart says %q, about a claim and state dir that are gone (a command for the user's own state dir), not saying it no longer applies:\n%s", w, said)
			}
		}
	}
}

// quickstart --keep opens with "in a temporary directory that is removed at the end: DIR",
// the very directory it then keeps (and never removes: its mark goes, so no later quickstart
// sweeps it). The first line of a kept run said the opposite of what --keep does. Found by
// helper review69.
func TestQuickstartKeepDoesNotSayItsDirectoryIsRemoved(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := hostpathtest.MountDir(t)
	dir, out := quickstartKept(t, parent)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the kept directory: %v", err)
	}
	first, _, _ := strings.Cut(out.String(), "\n==> 1.")
	if strings.Contains(first, "removed at the end") {
		t.Errorf("quickstart --keep, which keeps %s, opens saying it is removed at the end:\n%s", dir, first)
	}
}

// The advice of a kept run is to be copied and run: after `sudo bin/volctl quickstart --keep`
// it said `volctl --state-dir ... status`, not found unless volctl is on PATH. It names volctl as
// the run was named (QuickstartOptions.Self), quoted for a shell. Found by helper review69.
func TestQuickstartKeepAdviceNamesVolctlAsItWasRun(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := hostpathtest.MountDir(t)
	self := "/opt/volctl 1/bin/volctl"
	dir, out := quickstartKeptAs(t, parent, self)
	_, advice, _ := strings.Cut(out.String(), "Kept ")
	want := shellquote.Arg(self) + " " + shellquote.Flag("--state-dir", filepath.Join(dir, "state")) + " status"
	if !strings.Contains(advice, want) || !strings.Contains(advice, shellquote.Arg(self)+" plugin serve hostpath ") {
		t.Errorf("quickstart --keep run as %q advises:\n%s\nwant %q and the plugin served through it", self, advice, want)
	}
}
