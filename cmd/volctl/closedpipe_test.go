package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A command that changes the state, its output piped into a reader that stops reading
// (`volctl volume claim ... --verbose 2>&1 | head -1`), went on only until its first write:
// the kernel's SIGPIPE killed it there, between two RPCs, the claim left half-way for
// reconcile, the release's mounts half-undone. The reader gone, such a command finishes
// its work; only what it prints is lost.
func TestCommandThatWritesFinishesWhenItsReaderIsGone(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	env.createVolume("vol", spec.SingleNodeWriter)
	for _, step := range []struct {
		args      []string
		want      string // the claim's state after, "" for none
		wantClaim bool
	}{
		{[]string{"volume", "claim", "vol", "--alloc", "a", "--verbose"}, "published", true},
		{[]string{"volume", "release", "vol", "--alloc", "a", "--verbose"}, "", false},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // the reader gone before the first line
		cmd := exec.Command(shortVolctl(t), step.args...)
		cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1")
		cmd.Stdout, cmd.Stderr = w, w
		err = cmd.Run()
		w.Close()
		// Its result not printed, it exits 1, as for any output it could not write (docs/json.md).
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("volctl %s, its output a pipe nobody reads: %v; want exit status 1, its result unprinted", strings.Join(step.args, " "), err)
		} else if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Errorf("volctl %s, its output a pipe nobody reads: killed by %v before it finished", strings.Join(step.args, " "), ws.Signal())
		} else if ee.ExitCode() != 1 {
			t.Errorf("volctl %s, its output a pipe nobody reads: exit status %d; want 1, its result unprinted", strings.Join(step.args, " "), ee.ExitCode())
		}
		var st struct {
			Claims []struct {
				Alloc string `json:"alloc"`
				State string `json:"state"`
			} `json:"claims"`
		}
		out := env.ok("volume", "status", "vol", "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("volume status --json: %v\n%s", err, out)
		}
		switch {
		case step.wantClaim && (len(st.Claims) != 1 || st.Claims[0].State != step.want):
			t.Fatalf("after volctl %s into a closed pipe: claims %+v; want alloc a's, %s", strings.Join(step.args, " "), st.Claims, step.want)
		case !step.wantClaim && len(st.Claims) != 0:
			t.Fatalf("after volctl %s into a closed pipe: claims %+v; want none", strings.Join(step.args, " "), st.Claims)
		}
		env.checkInvariants()
	}
}

// A command that only reads (it takes no lock) ends quietly when its reader is gone, killed by
// SIGPIPE as any Unix filter, its stderr empty: commands opening the engine for writing had
// `Error: write /dev/stdout: broken pipe` and exit 1 after SIGPIPE was taken at the engine's
// open (review25d); it is taken at its first lock now. A listing that may finish what another
// command left (volume snapshot list takes locks) ends as a command that writes does: quietly,
// exit 1 (its output's EPIPE, readerGone).
func TestReadingCommandEndsQuietlyWhenItsReaderIsGone(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	env.createVolume("vol", spec.SingleNodeWriter)
	for _, args := range [][]string{
		{"events", "--json"},
		{"plugin", "status", "--json"},
		{"volume", "status", "--json"},
		{"group", "status", "--json"},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		var stderr strings.Builder
		cmd := exec.Command(shortVolctl(t), args...)
		cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1")
		cmd.Stdout, cmd.Stderr = w, &stderr
		err = cmd.Run()
		w.Close()
		var ee *exec.ExitError
		ws, _ := func() (syscall.WaitStatus, bool) {
			if errors.As(err, &ee) {
				ws, ok := ee.Sys().(syscall.WaitStatus)
				return ws, ok
			}
			return 0, false
		}()
		if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE || stderr.Len() != 0 {
			t.Errorf("volctl %s, its output a pipe nobody reads: %v, stderr %q; want the quiet end by SIGPIPE", strings.Join(args, " "), err, stderr.String())
		}
	}
}

// TestListingThatLocksEndsQuietlyWhenItsReaderIsGone: `volume snapshot list` takes locks (it
// finishes snapshots another command left half-way), so SIGPIPE is taken and its write fails
// with EPIPE: it printed "Error: write /dev/stdout: broken pipe" (review25d). Quiet, exit 1.
func TestListingThatLocksEndsQuietlyWhenItsReaderIsGone(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	env.createVolume("vol", spec.SingleNodeWriter)
	env.ok("volume", "snapshot", "create", "vol")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	var stderr strings.Builder
	cmd := exec.Command(shortVolctl(t), "volume", "snapshot", "list", "--json")
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || stderr.Len() != 0 {
		t.Fatalf("volctl volume snapshot list --json, its output a pipe nobody reads: %v, stderr %q; want a quiet end", err, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && !ws.Signaled() && ee.ExitCode() != 1 {
		t.Errorf("volctl volume snapshot list --json into a closed pipe: exit status %d; want 1 (or SIGPIPE's end)", ee.ExitCode())
	}
}

// TestClaimWhoseReaderIsGoneSaysOnStderrItIsKept: `volctl volume claim vol --alloc a | head
// -c0` in a script, its stderr kept. SIGPIPE taken at the first lock, the claim is made and
// kept, and the EPIPE of its one line was quiet: exit 1 and nothing on stderr, as a claim rolled
// back whose error was lost would look. The process, not the package's Report alone: the real
// SIGPIPE handling turns the write into the EPIPE that Report words.
func TestClaimWhoseReaderIsGoneSaysOnStderrItIsKept(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	env.createVolume("vol", spec.SingleNodeWriter)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	var stderr strings.Builder
	cmd := exec.Command(shortVolctl(t), "volume", "claim", "vol", "--alloc", "a")
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("volctl volume claim vol --alloc a | head -c0: %v; want exit status 1", err)
	}
	for _, want := range []string{`claim "vol" for alloc "a" published at `, "broken pipe", "the claim stands", "`volctl volume release vol --alloc a` releases it"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("volctl volume claim vol --alloc a | head -c0: stderr %q; want it to say %q", stderr.String(), want)
		}
	}
	// The claim was kept: the advice's release finds it.
	if out := env.ok("volume", "release", "vol", "--alloc", "a"); !strings.Contains(out, `Released write claim of alloc "a"`) {
		t.Errorf("volctl volume release vol --alloc a after the claim whose reader was gone: %q; want the claim released", out)
	}
}
