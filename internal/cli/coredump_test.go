package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// corePatternEnv, set, makes TestKeepSecretsOutOfCoreDumpsChild act, with it as core_pattern's
// path: it runs in the process TestCoreDumpsKeptOutUnderEveryCorePattern starts.
const corePatternEnv = "VOLCTL_TEST_CORE_PATTERN_FILE"

// KeepSecretsOutOfCoreDumps acts on the whole process (its core limit, its dumpability): each
// core_pattern is tried in a process of its own, which says what it was left with. Under a file
// or a pipe pattern, root's volctl lowers its soft limit to 1 and stays dumpable (its /proc
// files readable by a volctl without CAP_SYS_PTRACE); under a socket pattern ("@", Linux 6.16),
// which ignores the limit, it is made not dumpable as well; so with a hard limit of 0, which a
// pipe handler ignores.
func TestCoreDumpsKeptOutUnderEveryCorePattern(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("KeepSecretsOutOfCoreDumps acts for root only: run as root")
	}
	for _, tt := range []struct {
		pattern string
		hard    string // the hard limit the process starts with: "unlimited" or "0"
		want    string
	}{
		{"core", "unlimited", "dumpable 1, core limit 1"},
		{"|/usr/lib/systemd/systemd-coredump %P %u %g %s %t %c %h", "unlimited", "dumpable 1, core limit 1"},
		{"@/run/systemd/coredump.socket", "unlimited", "dumpable 0, core limit 1"},
		{"|/usr/share/apport/apport -p%p -s%s -c%c", "0", "dumpable 0, core limit 0"},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, "core_pattern")
		if err := os.WriteFile(file, []byte(tt.pattern+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// The shell sets both limits; the child starts with cores allowed up to the hard one.
		cmd := exec.Command("/bin/sh", "-c", `ulimit -H -c "$0" && ulimit -S -c "$0" && exec "$@"`,
			tt.hard, os.Args[0], "-test.run=^TestKeepSecretsOutOfCoreDumpsChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), corePatternEnv+"="+file)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("core_pattern %q: %v\n%s", tt.pattern, err, out)
		}
		if !strings.Contains(string(out), "volctl: "+tt.want+"\n") {
			t.Errorf("core_pattern %q, hard core limit %s: %s\nwant %q", tt.pattern, tt.hard, out, tt.want)
		}
	}
}

// TestKeepSecretsOutOfCoreDumpsChild is the process TestCoreDumpsKeptOutUnderEveryCorePattern
// starts; it does nothing unless started by it.
func TestKeepSecretsOutOfCoreDumpsChild(t *testing.T) {
	file := os.Getenv(corePatternEnv)
	if file == "" {
		t.Skip("run by TestCoreDumpsKeptOutUnderEveryCorePattern only")
	}
	corePatternPath = file
	KeepSecretsOutOfCoreDumps()
	dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("volctl: dumpable %d, core limit %d\n", dumpable, lim.Cur)
}
