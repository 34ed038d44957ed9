package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// advisedSudoLine is the command quickstart's refusal for want of mount privileges tells the
// user to type ("Run it as root: sudo ... quickstart"), up to the end of its line.
func advisedSudoLine(t *testing.T, err error) string {
	t.Helper()
	const lead = "Run it as root: "
	msg := err.Error()
	i := strings.Index(msg, lead)
	if i < 0 {
		t.Fatalf("quickstart without mount privileges does not say %q: %v", lead, err)
	}
	line := msg[i+len(lead):]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	return line
}

// TestQuickstartSudoAdviceQuotesAVolctlPathWithASpace: a user who is not root builds volctl in
// a checkout under a directory whose name has a space ("/home/ann/My Projects/volctl"), puts
// its bin on PATH as the README says (export PATH="$PWD/bin:$PATH") and runs `volctl
// quickstart`. It stops at the claim and advises "Run it as root: sudo /home/ann/My
// Projects/volctl/bin/volctl quickstart": the path (selfForSudo's full path of the binary, as
// sudo's secure_path would not find it) is printed raw, so pasted into a shell sudo is given
// "/home/ann/My" to run, "command not found". Every other command quickstart prints is written
// through shellquote (keptSelf quotes the same self). Correct: the path is quoted, so that
// the advice run in a shell runs this volctl's quickstart. The test runs the advised line in bash
// with sudo standing for a function printing the command it was given.
// Found by helper review79 (quickstart).
func TestQuickstartSudoAdviceQuotesAVolctlPathWithASpace(t *testing.T) {
	parent := hostpathtest.ShortDir(t)
	self := filepath.Join(parent, "My Projects", "volctl", "bin", "volctl")
	ios, _, _, _ := iostreams.Test()
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, Self: self,
		mounter: &hostpathtest.FakeMounter{Fail: unix.EPERM}, geteuid: func() int { return 1000 }}) // a user, not root: sudo is the advice
	if err == nil {
		t.Fatal("quickstart whose plugin may not mount succeeded")
	}
	advice := advisedSudoLine(t, err)
	got, rerr := exec.Command("bash", "-c", `sudo() { printf '%s\n' "$@"; }; `+advice).Output()
	if rerr != nil {
		t.Fatalf("running the advice %q in bash: %v", advice, rerr)
	}
	want := self + "\nquickstart\n"
	if string(got) != want {
		t.Errorf("the advice %q, run in a shell, gives sudo the words %q; want %q (volctl's path as one word, then quickstart)",
			advice, strings.Split(strings.TrimSpace(string(got)), "\n"), strings.Split(strings.TrimSpace(want), "\n"))
	}
}

// TestQuickstartKeepSudoAdviceKeepsKeep: a user who is not root runs `volctl quickstart --keep`
// to look at the volume and its state afterwards. It stops at the claim and advises "Run it as
// root: sudo volctl quickstart", without --keep: followed as printed, the run as root deletes
// the volume and removes its directory at the end ("Done: everything was cleaned up"), leaving
// nothing of what the user asked to keep, with nothing to say it will. Correct: the advised
// command is the one the user ran, through sudo, --keep included (sudo volctl quickstart
// --keep). The test runs the advised line in bash with sudo standing for a function printing
// the words it was given.
// Found by helper review79 (quickstart).
func TestQuickstartKeepSudoAdviceKeepsKeep(t *testing.T) {
	parent := hostpathtest.ShortDir(t)
	ios, _, _, _ := iostreams.Test()
	err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, Keep: true, Self: "volctl",
		mounter: &hostpathtest.FakeMounter{Fail: unix.EPERM}, geteuid: func() int { return 1000 }}) // a user, not root: sudo is the advice
	if err == nil {
		t.Fatal("quickstart --keep whose plugin may not mount succeeded")
	}
	advice := advisedSudoLine(t, err)
	got, rerr := exec.Command("bash", "-c", `sudo() { printf '%s\n' "$@"; }; `+advice).Output()
	if rerr != nil {
		t.Fatalf("running the advice %q in bash: %v", advice, rerr)
	}
	words := strings.Fields(string(got))
	if len(words) < 2 || words[0] != "volctl" || words[1] != "quickstart" || !strings.Contains(string(got), "\n--keep\n") {
		t.Errorf("`volctl quickstart --keep` run by a user who may not mount advises %q: run so (sudo %q), quickstart runs without --keep and removes everything it made; want the command run again with --keep\nerror: %v",
			advice, words, err)
	}
}
