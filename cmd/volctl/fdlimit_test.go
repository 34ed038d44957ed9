package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// TestFewOpenFilesSayWhatToRaise: volctl run under a low open files limit (`ulimit -n`, hard
// and soft, which Go cannot raise) fails wherever it meets the end of its descriptors (the
// state's lock file, one of SQLite's files, a lock, the redaction's read), and every such
// failure says what to raise, where SQLite's words alone ("unable to open database file (14)")
// sent the reader to the file's permissions. The state is left whole: a fresh state dir first
// opened under each limit opens afterwards as one never touched.
func TestFewOpenFilesSayWhatToRaise(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set the limit with ulimit")
	}
	// Each limit and command on a state dir of its own: the cases share nothing, and run in
	// parallel with each other and the package's other tests.
	var failed atomic.Int32
	t.Run("limits", func(t *testing.T) {
		for n := 9; n <= 16; n++ {
			for _, args := range [][]string{{"volume", "status"}, {"plugin", "status"}} {
				t.Run(fmt.Sprintf("%s/%d", strings.Join(args, "_"), n), func(t *testing.T) {
					t.Parallel()
					if underFewFiles(t, n, args) {
						failed.Add(1)
					}
				})
			}
		}
	})
	if failed.Load() == 0 {
		t.Fatal("no command failed under any of the limits: the test limits are too high to check anything")
	}
}

// underFewFiles runs volctl args under ulimit -n n on a fresh state dir, checks what it says if
// it fails and that the state dir opens afterwards, and reports whether it failed.
func underFewFiles(t *testing.T, n int, args []string) (failed bool) {
	state := t.TempDir()
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`ulimit -n %d && exec volctl "$@"`, n), "sh")
	cmd.Args = append(cmd.Args, args...)
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state, "NO_COLOR=1", "PATH="+shortPath(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if err != nil && ee.ExitCode() == 1 {
		failed = true
		if !strings.Contains(stderr.String(), "ran out of file descriptors") || !strings.Contains(stderr.String(), "ulimit -n 4096") {
			t.Errorf("volctl %s under ulimit -n %d fails without saying what to raise:\n%s", strings.Join(args, " "), n, stderr.String())
		}
	} else if err != nil && !strings.Contains(stderr.String(), "runtime: ") {
		// Below what the Go runtime itself needs, it dies before volctl runs (exit 2, "runtime: eventfd failed").
		t.Errorf("volctl %s under ulimit -n %d: %v\n%s", strings.Join(args, " "), n, err, stderr.String())
	}
	again := exec.Command(shortVolctl(t), args...)
	again.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state, "NO_COLOR=1")
	if out, err := again.CombinedOutput(); err != nil {
		t.Errorf("volctl %s, run again after ulimit -n %d: %v\n%s", strings.Join(args, " "), n, err, out)
	}
	return failed
}
