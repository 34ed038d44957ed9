package cli

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/iostreams/ptytest"
)

// TestSecretFileReadStopsOnInterrupt: --secret-file KEY=FILE of a named pipe nobody writes, or
// KEY=- with a standard input nobody closes, blocked in open or read on the command's own
// goroutine, where the context main ends at Ctrl-C or SIGTERM was never looked at: volctl
// volume snapshot list or delete ignored both and only SIGKILL ended it. The read gives up when
// the context ends, naming the key and the file, exit 1 as any interrupted command, as a spec
// file's read does (TestSpecReadStopsOnInterrupt).
func TestSecretFileReadStopsOnInterrupt(t *testing.T) {
	t.Setenv("VOLCTL_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	fifo := filepath.Join(t.TempDir(), "token")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	// At the end, a writer lets an open still blocked on the pipe (the old code's) return.
	defer func() {
		if w, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			w.Close()
		}
	}()
	stdin, w := io.Pipe() // never written, closed when the test ends
	defer w.Close()
	for _, tt := range []struct{ name, file string }{
		{"named pipe", fifo},
		{"standard input", "-"},
	} {
		for _, args := range [][]string{
			{"volume", "snapshot", "list"},
			{"volume", "snapshot", "delete", "mem", "snap-1", "--yes"},
		} {
			t.Run(tt.name+"/"+args[2], func(t *testing.T) {
				ios, _, _, _ := iostreams.Test()
				ios.In = stdin
				f := NewFactory(ios)
				defer f.Close()
				root := NewRootCmd(f)
				root.SetArgs(append(args, "--secret-file", "token="+tt.file))
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- root.ExecuteContext(ctx) }()
				time.Sleep(50 * time.Millisecond) // the read under way
				cancel()
				select {
				case err := <-done:
					want := "--secret-file token=" + tt.file + ": interrupted while waiting for it to be written"
					if err == nil || !strings.Contains(err.Error(), want) || ExitCode(err) != ExitError {
						t.Fatalf("volctl %s after the context ended: %v (exit %d); want %q, exit %d", strings.Join(args, " "), err, ExitCode(err), want, ExitError)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("volctl %s --secret-file token=%s still reading 10 s after the context ended (Ctrl-C, SIGTERM ignored)", strings.Join(args, " "), tt.file)
				}
			})
		}
	}
}

// TestSecretFileThatIsNoFileIsRefused: --secret-file of a directory, a device or a socket is
// refused before anything is read, naming the key, the path and what it is. /dev/zero was read
// up to the bound (64 KiB of NULs) and refused as "more than 65536 bytes", after a warning to
// chmod 600 /dev/zero; /dev/null gave the plugin an empty secret, without a word.
func TestSecretFileThatIsNoFileIsRefused(t *testing.T) {
	t.Setenv("VOLCTL_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tt := range []struct{ file, want string }{
		{dir, "is a directory"},
		{"/dev/zero", "is a device, not a file"},
		{"/dev/null", "is a device, not a file"},
		// Opening a socket fails (ENXIO): it read "no such device or address" (review28d).
		{sock, "is a socket, not a file"},
	} {
		ios, _, _, errOut := iostreams.Test()
		f := NewFactory(ios)
		root := NewRootCmd(f)
		root.SetArgs([]string{"volume", "snapshot", "list", "--secret-file", "token=" + tt.file})
		err := root.ExecuteContext(context.Background())
		f.Close()
		want := "--secret-file token=" + tt.file + ": " + tt.want
		if err == nil || !strings.Contains(err.Error(), want) || ExitCode(err) != ExitUsage {
			t.Errorf("--secret-file token=%s: %v (exit %d); want %q, exit %d", tt.file, err, ExitCode(err), want, ExitUsage)
		}
		if errOut.Len() != 0 {
			t.Errorf("--secret-file token=%s: stderr %q, want nothing (no warning about a file that is refused)", tt.file, errOut.String())
		}
	}
}

// TestSecretFileTypedAtATerminalIsRead: --secret-file KEY=/dev/tty (or /dev/stdin at a
// terminal) reads the secret a user types, as - does; the refusal of devices (/dev/zero is
// endless, /dev/null empty) refused the terminal too, a device as well (review28d: `volume
// snapshot list --secret-file token=/dev/stdin` at a terminal exited 2 where it had listed).
func TestSecretFileTypedAtATerminalIsRead(t *testing.T) {
	controller, term, err := ptytest.Open(80, 24)
	if err != nil {
		t.Skipf("no pseudo-terminal to type at: %v", err)
	}
	defer controller.Close()
	defer term.Close()
	// Typed, then end of input (^D at the start of a line), as a user at the terminal does.
	if _, err := controller.Write([]byte("s3cret-typed\n\x04")); err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	sf := secretFlags{Files: []string{"token=" + term.Name()}}
	got, err := sf.parse(t.Context(), strings.NewReader(""), &errOut)
	if err != nil {
		t.Fatalf("--secret-file token=%s (a terminal): %v; want the value typed there", term.Name(), err)
	}
	if got["token"] != "s3cret-typed" {
		t.Fatalf("--secret-file token=%s (a terminal) read %q; want %q", term.Name(), got["token"], "s3cret-typed")
	}
}

// TestSecretTypedAtATerminalIsAskedForAndNotShown: `--secret-file token=-` with standard input
// at a terminal (or token=/dev/tty) waited without a word for an end of input (^D), and the
// terminal showed the secret as it was typed, on the screen and in its scrollback. It says on
// stderr what it waits for, reads one line with the terminal's echo off, and gives the echo back
// after, and when the read is interrupted (Ctrl-C) too. Found by helper review70 (an aside of the
// input review).
func TestSecretTypedAtATerminalIsAskedForAndNotShown(t *testing.T) {
	for _, atStdin := range []bool{true, false} {
		controller, tty, err := ptytest.Open(80, 24)
		if err != nil {
			t.Skipf("no pseudo-terminal to type at: %v", err)
		}
		defer controller.Close()
		defer tty.Close()
		file := tty.Name()
		if atStdin {
			file = "-"
		}
		r := typeSecret(t, controller, tty, file, "s3cret-typed\n")
		if r.err != nil || r.s["token"] != "s3cret-typed" {
			t.Fatalf("--secret-file token=%s at a terminal: %q, %v; want the line typed", file, r.s["token"], r.err)
		}
		if shown := readAvailable(controller); strings.Contains(shown, "s3cret") {
			t.Errorf("--secret-file token=%s at a terminal: the terminal showed %q: the secret was echoed", file, shown)
		}
		if !echoOn(t, tty) {
			t.Errorf("--secret-file token=%s at a terminal: the terminal's echo is off after the read", file)
		}
	}

	// Interrupted while it waits: the echo is given back before the command ends.
	controller, tty, err := ptytest.Open(80, 24)
	if err != nil {
		t.Skipf("no pseudo-terminal to type at: %v", err)
	}
	defer controller.Close()
	defer tty.Close()
	var errOut lockedBuffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := (&secretFlags{Files: []string{"token=-"}}).parse(ctx, tty, &errOut)
		done <- err
	}()
	waitEchoOff(t, tty, &errOut, "Secret token")
	cancel()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("--secret-file token=- at a terminal: still reading 10 s after the interrupt")
	}
	if err == nil {
		t.Fatal("--secret-file token=- at a terminal, interrupted: no error")
	}
	if !echoOn(t, tty) {
		t.Error("--secret-file token=- at a terminal, interrupted: the terminal's echo is left off")
	}
	controller.Write([]byte("\n")) // ends the read still waiting
}

// waitEchoOff waits until errOut says what the read waits for and the terminal's echo is off.
func waitEchoOff(t *testing.T, tty *os.File, errOut *lockedBuffer, prompt string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(errOut.String(), prompt) && !echoOn(t, tty) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reading a secret at a terminal: after 10 s, stderr %q and echo on %v; want %q said and the echo off",
				errOut.String(), echoOn(t, tty), prompt)
		}
	}
}

func echoOn(t *testing.T, tty *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatalf("termios of %s: %v", tty.Name(), err)
	}
	return tio.Lflag&unix.ECHO != 0
}

// readAvailable reads what the terminal has shown within a moment (the pty's controller side is
// not pollable by Go's runtime, so no read deadline: poll(2) says when a read would not block).
func readAvailable(controller *os.File) string {
	var out []byte
	buf := make([]byte, 4096)
	fd := int(controller.Fd())
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 300); err != nil || n == 0 {
			return string(out)
		}
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			return string(out)
		}
		out = append(out, buf[:n]...)
	}
}

// typedSecret is what secretFlags.parse returned of a secret typed at a terminal.
type typedSecret struct {
	s   map[string]string
	err error
}

// typeSecret runs `--secret-file token=FILE` (- for standard input, tty) at the pseudo-terminal
// tty, waits until it asks for the secret with the echo off, types typed at controller, and
// returns what the read gave.
func typeSecret(t *testing.T, controller, tty *os.File, file, typed string) typedSecret {
	t.Helper()
	var errOut lockedBuffer
	sf := secretFlags{Files: []string{"token=" + file}}
	done := make(chan typedSecret, 1)
	go func() {
		got, err := sf.parse(t.Context(), tty, &errOut)
		done <- typedSecret{got, err}
	}()
	waitEchoOff(t, tty, &errOut, "Secret token")
	go controller.Write([]byte(typed)) // a line longer than the terminal keeps may block
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		controller.Write([]byte("\n"))
		t.Fatalf("--secret-file token=%s at a terminal: still reading 10 s after a line was typed", file)
	}
	return typedSecret{}
}
