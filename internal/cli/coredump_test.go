package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	coreWatchInterval = 20 * time.Millisecond
	KeepSecretsOutOfCoreDumps()
	state := func() (int, uint64) {
		dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var lim unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil {
			t.Fatal(err)
		}
		return dumpable, lim.Cur
	}
	dumpable, limit := state()
	fmt.Printf("volctl: dumpable %d, core limit %d\n", dumpable, limit)
	if os.Getenv(coreChangeEnv) == "" {
		return
	}
	// settled waits up to 3 s for the process to be left as want says, and prints what it is.
	settled := func(what string, wantDumpable int) {
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if d, l := state(); d == wantDumpable && l == coreLimit {
				break
			}
		}
		d, l := state()
		fmt.Printf("volctl: %s: dumpable %d, core limit %d\n", what, d, l)
	}
	if err := os.WriteFile(file, []byte("@/run/systemd/coredump.socket\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	settled("core_pattern a socket", 0)
	if err := os.WriteFile(file, []byte("core\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	settled("core_pattern a file again", 1)
	// What `prlimit --pid PID --core=unlimited` does from outside.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}); err != nil {
		t.Fatal(err)
	}
	settled("soft limit raised to unlimited", 1)
}

// coreChangeEnv, set with corePatternEnv, makes TestKeepSecretsOutOfCoreDumpsChild change
// core_pattern and its own core limit after KeepSecretsOutOfCoreDumps ran, as an admin (or a
// package upgrade) may while the agent runs for weeks, and say what it was left with.
const coreChangeEnv = "VOLCTL_TEST_CORE_CHANGE"

// The agent runs for weeks, and core_pattern is the host's: a systemd upgrade that moves
// systemd-coredump to a socket ("@/run/systemd/coredump.socket", Linux 6.16), which ignores
// RLIMIT_CORE, or an operator's `prlimit --core=unlimited` on the agent to debug it, came after
// volctl decided at its start, and a crash then sent (or wrote) its memory, secrets and all,
// whole: the kernel of this machine, core_pattern set to a socket, sent an 8 MB core of a
// process whose limit was 1 or 0, and none of one not dumpable. Now root's volctl checks again
// every coreWatchInterval: not dumpable while the pattern is a socket, dumpable again once it is
// not (its /proc files readable by other volctl processes), its soft limit lowered back.
func TestCoreDumpsKeptOutWhenCorePatternOrLimitChanges(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("KeepSecretsOutOfCoreDumps acts for root only: run as root")
	}
	file := filepath.Join(t.TempDir(), "core_pattern")
	if err := os.WriteFile(file, []byte("core\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `ulimit -H -c unlimited && ulimit -S -c unlimited && exec "$@"`,
		"sh", os.Args[0], "-test.run=^TestKeepSecretsOutOfCoreDumpsChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), corePatternEnv+"="+file, coreChangeEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"volctl: dumpable 1, core limit 1\n",
		"volctl: core_pattern a socket: dumpable 0, core limit 1\n",
		"volctl: core_pattern a file again: dumpable 1, core limit 1\n",
		"volctl: soft limit raised to unlimited: dumpable 1, core limit 1\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("volctl as root, its core_pattern and core limit changed after its start:\n%s\nwant %q", out, want)
		}
	}
}
