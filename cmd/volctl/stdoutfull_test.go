package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStdoutFullFailsTheCommand runs volctl with its standard output on /dev/full, as a file
// on a full disk (`volctl validate *.hcl > report`, `volctl --help > usage.txt`): whatever the
// command, output that never arrived is a failure, exit 1 with the write's error on stderr,
// never exit 0 and an empty file. The commands here are those that printed through a writer
// whose error nobody looked at: cobra's help, validate's summary lines.
func TestStdoutFullFailsTheCommand(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full to write to: %v", err)
	}
	defer full.Close()
	state := t.TempDir()
	spec := filepath.Join("..", "..", "fixtures", "valid", "create__volume.hcl")
	for _, args := range [][]string{
		{"--help"},
		{"volume", "claim", "--help"},
		{"help", "volume"},
		{"validate", spec},
		{"version"},
		{"status"},
	} {
		cmd := exec.Command(shortVolctl(t), args...)
		cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != 1 || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("volctl %s with stdout full: exit %d, stderr %q; want exit 1 and the write's error", strings.Join(args, " "), code, stderr.String())
		}
	}
}
