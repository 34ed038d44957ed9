package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// stdoutFullError is what every command says, on stderr, when what it prints cannot be
// written to stdout (a full disk behind `> file`: /dev/full), exit 1.
const stdoutFullError = "Error: writing to standard output: no space left on device; what volctl printed there is incomplete\n"

// runIntoFull runs volctl with args, its stdout /dev/full, and returns its stderr and exit code.
func runIntoFull(t *testing.T, state string, args ...string) (string, int) {
	t.Helper()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full to write to: %v", err)
	}
	defer full.Close()
	var stderr strings.Builder
	cmd := exec.Command(shortVolctl(t), args...)
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state, "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = full, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stderr.String(), 0
	case errors.As(err, &ee):
		return stderr.String(), ee.ExitCode()
	}
	t.Fatalf("volctl %s: %v", strings.Join(args, " "), err)
	return "", 0
}

// TestStdoutThatCannotBeWrittenIsOneError: each command family that prints, its stdout a file
// it cannot write (`> /dev/full`, a full disk), exits 1 with one error naming standard output.
// Before, there were two wordings: a command's own write said "Error: write /dev/stdout: no
// space left on device", a write noticed only at the end (--help's) "Error: writing to standard
// output: write /dev/stdout: no space left on device; ...". A reader gone (`| head -1`) is
// not this: TestReadingCommandEndsQuietlyWhenItsReaderIsGone.
func TestStdoutThatCannotBeWrittenIsOneError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	specFile := filepath.Join(dir, "v.hcl")
	if out, err := exec.Command(shortVolctl(t), "init", "volume", specFile).CombinedOutput(); err != nil {
		t.Fatalf("volctl init volume: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"version"},
		{"--help"},
		{"volume", "claim", "--help"},
		{"completion", "bash"},
		{"init", "volume", "-"},
		{"validate", "--json", specFile},
		{"status", "--json"},
		{"volume", "status", "--json"},
		{"volume", "ls", "-t", "{{range .}}{{.id}}{{end}}x"},
		{"plugin", "status", "--jq", "length"},
		{"group", "status", "--json"},
		{"events", "--json"},
	} {
		if stderr, code := runIntoFull(t, state, args...); code != 1 || stderr != stdoutFullError {
			t.Errorf("volctl %s > /dev/full: exit %d, stderr %q; want exit 1, %q", strings.Join(args, " "), code, stderr, stdoutFullError)
		}
	}
}

// The same for the tables and details, which print once there is something in the state.
func TestStdoutThatCannotBeWrittenIsOneErrorForTables(t *testing.T) {
	t.Parallel()
	if err := hostpathtest.CanMount(); err != nil {
		t.Skipf("the host plugin cannot mount here (%v): the volume these tables show is not made", err)
	}
	env := newHostEnv(t)
	env.createVolume("vol", spec.SingleNodeWriter)
	for _, args := range [][]string{
		{"status"},
		{"volume", "status"},
		{"volume", "status", "vol"},
		{"plugin", "status"},
		{"plugin", "status", "hp"},
		{"events"},
	} {
		if stderr, code := runIntoFull(t, env.state, args...); code != 1 || stderr != stdoutFullError {
			t.Errorf("volctl %s > /dev/full: exit %d, stderr %q; want exit 1, %q", strings.Join(args, " "), code, stderr, stdoutFullError)
		}
	}
}
