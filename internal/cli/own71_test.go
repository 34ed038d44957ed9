package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams/ptytest"
)

// TestNamedTerminalIsNotWarnedAsAFileOthersRead: `--secret-file token=/dev/tty` reads the secret
// typed at the terminal, echo off; then it warned that /dev/tty (mode 0666, as on every Linux)
// "may be read by users other than its owner: the secret is theirs too" and advised `chmod 600
// /dev/tty`: a device, not a file holding the secret, whose chmod fails for a user and, by root,
// breaks /dev/tty for every other user. Run in a child with the pseudo-terminal as its
// controlling terminal, for /dev/tty to name it. Found by helper review71 (own review).
func TestNamedTerminalIsNotWarnedAsAFileOthersRead(t *testing.T) {
	if os.Getenv("VOLCTL_TEST_DEVTTY_CHILD") == "1" {
		var errOut lockedBuffer
		got, err := (&secretFlags{Files: []string{"token=/dev/tty"}}).parse(t.Context(), strings.NewReader(""), &errOut)
		fmt.Fprintf(os.Stdout, "\nRESULT err=%v value=%q\nSTDERR<<%s>>\n", err, got["token"], errOut.String())
		return
	}
	controller, tty, err := ptytest.Open(80, 24)
	if err != nil {
		t.Skipf("no pseudo-terminal to type at: %v", err)
	}
	defer controller.Close()
	defer tty.Close()
	var out lockedBuffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestNamedTerminalIsNotWarnedAsAFileOthersRead$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VOLCTL_TEST_DEVTTY_CHILD=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if echoOff := !echoOn(t, tty); echoOff {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never turned the echo off: %s", out.String())
		}
	}
	if _, err := controller.Write([]byte("s3cret-typed\n")); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-waited
		t.Fatalf("child still running 20 s after a line was typed: %s", out.String())
	}
	s := out.String()
	if !strings.Contains(s, `value="s3cret-typed"`) {
		t.Fatalf("--secret-file token=/dev/tty did not read the line typed: %s", s)
	}
	if strings.Contains(s, "may be read by users other than its owner") || strings.Contains(s, "chmod 600") {
		i := strings.Index(s, "STDERR<<")
		t.Errorf("--secret-file token=/dev/tty (the secret typed there, echo off): stderr %s: it warns of the terminal device as of a file holding the secret, and advises a chmod of /dev/tty", s[i:])
	}
}

// TestSecretTypedLongerThanTheTerminalLineIsRefused: the terminal is read in canonical mode
// (term.ReadPassword keeps ICANON), whose line holds 4095 bytes: a longer secret pasted at the
// prompt was cut short by the kernel, silently, and the cut value sent as the secret. Refused
// now, naming a file as the way. Found by helper review71 (own review).
func TestSecretTypedLongerThanTheTerminalLineIsRefused(t *testing.T) {
	controller, tty, err := ptytest.Open(80, 24)
	if err != nil {
		t.Skipf("no pseudo-terminal to type at: %v", err)
	}
	defer controller.Close()
	defer tty.Close()
	secret := strings.Repeat("k", 6000)
	r := typeSecret(t, controller, tty, "-", secret+"\n")
	if r.err == nil && r.s["token"] != secret {
		t.Errorf("--secret-file token=- at a terminal, a %d-byte secret typed: read %d bytes with no error: the secret sent is cut short", len(secret), len(r.s["token"]))
	}
}

// TestGroupJobOfVolumesHandedOverToTheDefaultNamespaceNamesIt: a volume handed over with
// NOMAD_NAMESPACE unset is in Nomad's namespace default for good (its mark records "default").
// The group job exported afterwards named no namespace, as before the fix for "team": run from a
// shell whose NOMAD_NAMESPACE names another namespace, it landed there, where Nomad has no such
// volume, the very case TestGroupJobOfVolumesHandedOverGoesToTheirNomadNamespace mends. Found by
// helper review71 (own review).
func TestGroupJobOfVolumesHandedOverToTheDefaultNamespaceNamesIt(t *testing.T) {
	job, _ := groupJobOfVolumesHandedOverTo(t, "default")
	if !regexp.MustCompile(`(?m)^\s*namespace\s*=\s*"default"`).Match(job) {
		t.Errorf("the job of a group whose volumes Nomad has in namespace default (handed over there, the mark records it) names no namespace: run with NOMAD_NAMESPACE=team, it lands in team, where Nomad has no volume logs[0]\njob:\n%s", job)
	}
}

// TestGuessLetGoStillSetsTheLimitGiven: `volume expand v --size SIZE --limit L` at the size
// recorded sets capacity_max to L. Where the expand let go of a node expansion owed as a guess
// (the node half has no EXPAND_VOLUME), the early return this round's note added skipped that:
// the command exited 0, printed its note, and the --limit given was dropped. Found by helper
// review71 (own review).
func TestGuessLetGoStillSetsTheLimitGiven(t *testing.T) {
	ctx := context.Background()
	e, _ := guessOwedThroughASplitPlugin(t)
	code, out, errOut := runOnOut(ctx, e, "volume", "expand", "v", "--size", "4MiB", "--limit", "8MiB")
	if code != ExitOK {
		t.Fatalf("expand --limit 8MiB: exit %d: %s", code, errOut)
	}
	v, err := e.Volume(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if v.RequestedMax != 8<<20 {
		t.Errorf("`volume expand v --size 4MiB --limit 8MiB` (the guess let go) exited 0 and left capacity_max %d; want 8MiB, the --limit given\nstdout: %s\nstderr: %s", v.RequestedMax, out, errOut)
	}
}
