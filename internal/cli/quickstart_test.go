package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// assertCleanedUp fails unless quickstart left nothing under parent: no directory, no mount.
func assertCleanedUp(t *testing.T, parent string) {
	t.Helper()
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(parent))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		t.Errorf("still mounted: %s", m.Mountpoint)
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(parent, e.Name()))
	}
}

func TestQuickstart(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := hostpathtest.MountDir(t)
	ios, _, out, errOut := iostreams.Test()
	// What is under the state's staging dir after each step: the last step deletes the volume
	// and deregisters the plugin, which take their staging directories (kept while the volume
	// is registered) with them, before the cleanup removes the whole directory.
	var staging []string
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent,
		afterStep: func(int) {
			staging, _ = filepath.Glob(filepath.Join(parent, "volctl-quickstart-*", "state", "staging", "*"))
		}})
	if err != nil {
		t.Fatalf("quickstart: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if len(staging) != 0 {
		t.Errorf("left under the staging dir after the volume's delete: %v", staging)
	}
	for _, w := range []string{
		"==> 1. Point volctl at a state dir of its own",
		"$ volctl plugin register --id hostpath --socket " + parent,
		`Plugin "hostpath" registered: hostpath.csi.volctl.dev`,
		`Volume "demo" created (external ID "vol-`,
		"$ volctl volume claim demo --alloc web-0\n" + parent,
		"hello from volctl\n",
		"Staged             = yes",
		`Released write claim of alloc "web-0" on volume "demo"`,
		`Volume "demo" deleted`,
		`Plugin "hostpath" deregistered`,
		"Done: everything was cleaned up",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("stdout lacks %q", w)
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr = %q, want nothing", errOut)
	}
	assertCleanedUp(t, parent)
}

// quickstartKept runs quickstart --keep under parent and returns the directory it kept and what
// it printed.
func quickstartKept(t *testing.T, parent string) (string, *bytes.Buffer) {
	t.Helper()
	return quickstartKeptAs(t, parent, "")
}

// quickstartKeptAs is quickstartKept run as self (QuickstartOptions.Self; "" is volctl).
func quickstartKeptAs(t *testing.T, parent, self string) (string, *bytes.Buffer) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	if err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, Keep: true, Self: self}); err != nil {
		t.Fatalf("quickstart --keep: %v\n%s", err, out)
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, "volctl-quickstart-*"))
	if len(dirs) != 1 {
		t.Fatalf("kept dirs = %v, want one", dirs)
	}
	return dirs[0], out
}

func TestQuickstartKeep(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := hostpathtest.MountDir(t)
	dir, out := quickstartKept(t, parent)
	if _, err := os.Stat(filepath.Join(dir, "state", "volctl.db")); err != nil {
		t.Errorf("the state dir was not kept: %v", err)
	}
	if !strings.Contains(out.String(), "volctl --state-dir "+filepath.Join(dir, "state")+" volume status demo") {
		t.Errorf("stdout does not say how to inspect the state:\n%s", out)
	}
	if strings.Contains(out.String(), `Volume "demo" deleted`) {
		t.Errorf("--keep deleted the volume")
	}
	if mounts, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(parent)); len(mounts) != 0 {
		t.Errorf("--keep left %d mount(s)", len(mounts))
	}
}

// Without mount privileges quickstart stops at the claim, says root is needed, exits 1 and
// still cleans up everything. A plugin whose bind mounts fail with EPERM plays that host, so
// this runs as any user.
func TestQuickstartWithoutMountPrivileges(t *testing.T) {
	parent := hostpathtest.ShortDir(t)
	ios, _, out, errOut := iostreams.Test()
	// A user, not root (root without CAP_SYS_ADMIN: TestQuickstartAsRootWithoutCapabilityIsNotToldToUseSudo).
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent,
		mounter: &hostpathtest.FakeMounter{Fail: unix.EPERM}, geteuid: func() int { return 1000 }})
	if ExitCode(err) != ExitError {
		t.Fatalf("err = %v (exit %d), want exit 1", err, ExitCode(err))
	}
	for _, w := range []string{"quickstart stopped at the claim: mounting a volume needs root", "sudo volctl quickstart",
		"(NodeStageVolume answered FailedPrecondition: ", "bind-mounting needs root"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	if strings.Contains(err.Error(), "in use elsewhere") {
		t.Errorf("error carries the generic hint for the code, though the cause is known: %v", err)
	}
	if !strings.Contains(out.String(), "==> 5. Claim it") || strings.Contains(out.String(), "==> 6.") {
		t.Errorf("stdout should stop at the claim step:\n%s", out)
	}
	if !strings.Contains(errOut.String(), "Cleaned up:") {
		t.Errorf("stderr = %q, want the clean-up note", errOut)
	}
	assertCleanedUp(t, parent)
}

// An interrupt (Ctrl-C cancels the command's context) at any step still cleans up: the
// claim is released through the plugin, nothing stays mounted, the directory goes.
func TestQuickstartInterrupted(t *testing.T) {
	for _, tt := range []struct {
		name       string
		after      int  // cancel once this step is done
		realMounts bool // the claim is published: needs root
	}{
		{name: "before the claim", after: 4},
		{name: "while claimed", after: 5, realMounts: true},
		{name: "after the status", after: 7, realMounts: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mounter hostpath.Mounter = &hostpathtest.FakeMounter{}
			parent := hostpathtest.ShortDir(t)
			if tt.realMounts {
				hostpathtest.RequireMount(t)
				parent, mounter = hostpathtest.MountDir(t), nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ios, _, out, errOut := iostreams.Test()
			err := quickstartRun(ctx, &QuickstartOptions{IO: ios, TempDir: parent, mounter: mounter,
				afterStep: func(step int) {
					if step == tt.after {
						cancel()
					}
				}})
			if err == nil || !strings.Contains(err.Error(), "quickstart: interrupted") {
				t.Fatalf("err = %v, want an interrupt\nstdout:\n%s", err, out)
			}
			if !strings.Contains(errOut.String(), "Interrupted: cleaning up") || !strings.Contains(errOut.String(), "Cleaned up:") {
				t.Errorf("stderr = %q", errOut)
			}
			assertCleanedUp(t, parent)
		})
	}
}

// The advice to run quickstart as root names volctl as sudo will find it: sudo resets PATH
// to its secure_path, so a volctl found through the user's PATH elsewhere (the README's
// export PATH="$PWD/bin:$PATH") is named by its full path, a path typed is kept as typed.
func TestQuickstartSudoNamesVolctlAsSudoFindsIt(t *testing.T) {
	for _, tt := range []struct{ argv0, exe, want string }{
		{"bin/volctl", "/home/u/volctl/bin/volctl", "bin/volctl"},
		{"./volctl", "/home/u/volctl", "./volctl"},
		{"volctl", "/home/u/volctl/bin/volctl", "/home/u/volctl/bin/volctl"},
		{"volctl", "/usr/local/bin/volctl", "volctl"},
		{"volctl", "/usr/bin/volctl", "volctl"},
		{"volctl", "", "volctl"},
	} {
		if got := selfForSudo(tt.argv0, tt.exe); got != tt.want {
			t.Errorf("selfForSudo(%q, %q) = %q, want %q", tt.argv0, tt.exe, got, tt.want)
		}
	}
	parent := hostpathtest.ShortDir(t)
	ios, _, _, _ := iostreams.Test()
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, Self: "bin/volctl",
		mounter: &hostpathtest.FakeMounter{Fail: unix.EPERM}, geteuid: func() int { return 1000 }}) // a user, not root: sudo is the advice
	if err == nil || !strings.Contains(err.Error(), "Run it as root: sudo bin/volctl quickstart") {
		t.Fatalf("err = %v, want it to say: Run it as root: sudo bin/volctl quickstart", err)
	}
}

// Quickstart opens its engine itself, as the dashboard and the agent do: a state-dir error
// names the dir once (TestCommandsOpeningTheirOwnEngineNameTheStateDirOnce).
func TestQuickstartStateDirErrorNamesTheDirOnce(t *testing.T) {
	parent := hostpathtest.ShortDir(t)
	ios, _, _, _ := iostreams.Test()
	var state string
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent,
		mounter: &hostpathtest.FakeMounter{},
		afterStep: func(step int) {
			if step != 1 { // the state dir is named, not made yet
				return
			}
			dirs, err := filepath.Glob(filepath.Join(parent, "volctl-quickstart-*"))
			if err != nil || len(dirs) != 1 {
				t.Fatalf("quickstart's directory: %v, %v", dirs, err)
			}
			state = filepath.Join(dirs[0], "state")
			if err := os.WriteFile(state, []byte("not a directory"), 0o600); err != nil {
				t.Fatal(err)
			}
		}})
	if err == nil {
		t.Fatal("quickstart with its state dir a file succeeded")
	}
	if n := strings.Count(err.Error(), state); n != 1 {
		t.Errorf("%q names the state dir %d times, want once", err, n)
	}
	assertCleanedUp(t, parent)
}

// TestQuickstartCommandsRunAsShown: quickstart says each step "shows the command you would type
// to do it yourself", and its paths are under $TMPDIR, whatever a user set that to. In a
// directory named with a space and a "$", the export, cat and echo lines printed the paths
// raw: pasted, `export VOLCTL_STATE_DIR=/tmp/a b$x/...` sets the state dir to "/tmp/a" and cat
// reads files that are not there. Each line, run by sh, gives the path quickstart used.
func TestQuickstartCommandsRunAsShown(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := filepath.Join(hostpathtest.MountDir(t), "a b$x")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, out := quickstartKept(t, parent)
	sh := func(line string) string {
		t.Helper()
		got, err := exec.Command("sh", "-c", line).Output()
		if err != nil {
			t.Errorf("sh -c %q: %v", line, err)
		}
		return string(got)
	}
	var shell int
	for line := range strings.Lines(out.String()) {
		cmd, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "$ ")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(cmd, "export "):
			shell++
			if got, want := sh(cmd+`; printf %s "$VOLCTL_STATE_DIR"`), filepath.Join(dir, "state"); got != want {
				t.Errorf("%s\nsets VOLCTL_STATE_DIR to %q, want %q", cmd, got, want)
			}
		case strings.HasPrefix(cmd, "cat "):
			shell++
			sh(cmd) // the spec and the file written through the claim are kept: cat fails on any other path
		case strings.HasPrefix(cmd, "echo "):
			shell++
			// The claim is released, its target gone: the words after > are printed instead.
			_, target, _ := strings.Cut(cmd, " > ")
			if got, want := sh("printf %s "+target), "/hello.txt"; !strings.HasPrefix(got, filepath.Join(dir, "state", "publish")+"/") || !strings.HasSuffix(got, want) {
				t.Errorf("%s\nwrites to %q, want a file in the claim's target under %s", cmd, got, dir)
			}
		}
	}
	if shell != 4 {
		t.Errorf("%d shell lines (export, cat, echo, cat) checked, want 4:\n%s", shell, out)
	}
}
