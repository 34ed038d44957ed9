package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/testproc"
)

// privateNSEnv, set, makes TestPrivateMountNamespaceChild act: it runs in the child process
// TestOperationsOnMountsRefusedInAPrivateMountNamespace starts in a mount namespace of its own.
const privateNSEnv = "VOLCTL_TEST_PRIVATE_NS_DIR"

// noPtraceChildEnv, set, makes TestPrivateMountNamespaceChild check it runs without CAP_SYS_PTRACE.
const noPtraceChildEnv = "VOLCTL_TEST_NO_PTRACE_CHILD"

// The adversary: a shell left in a mount namespace of its own (`unshare -m`, whose mounts are
// private) from before a claim was made. The plugin mounts in the host's namespace, so the
// claim's target is nothing in this one: a reconcile run there took the claim for one whose
// mount was lost, sent NodePublishVolume again, found no mount, and recorded the claim
// degraded and node-staged while its mount was in place; a claim there was rolled back as one
// the plugin had not published. Every operation on mounts now refuses up front, naming the two
// namespaces and what to do, and changes nothing.
func TestOperationsOnMountsRefusedInAPrivateMountNamespace(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process in a mount namespace of its own")
	}
	// Without an agent the plugin's namespace is the reference; with one, the agent's (here
	// this process, holding the agent lock, as the plugin's server is).
	t.Run("plugin", func(t *testing.T) { refusedInAPrivateMountNamespace(t, false, false) })
	t.Run("agent", func(t *testing.T) { refusedInAPrivateMountNamespace(t, true, false) })
	// A volctl without CAP_SYS_PTRACE (Docker's default set, a unit's CapabilityBoundingSet)
	// cannot read /proc/PID/ns/mnt of a process holding capabilities it lacks, nor of a
	// non-dumpable one: the check took that for "cannot tell" and let a release in a private
	// namespace through, losing the claim. It now compares the mount tables, which it can read.
	t.Run("plugin without CAP_SYS_PTRACE", func(t *testing.T) { refusedInAPrivateMountNamespace(t, false, true) })
	t.Run("agent without CAP_SYS_PTRACE", func(t *testing.T) { refusedInAPrivateMountNamespace(t, true, true) })
}

func refusedInAPrivateMountNamespace(t *testing.T, agent, noPtrace bool) {
	h := newHarness(t, nil)
	h.create(volume("v1"))
	h.claim(ClaimRequest{VolumeID: "v1", Alloc: "a"})
	before := h.liveClaims("v1")
	if len(before) != 1 || before[0].State != store.ClaimPublished {
		t.Fatalf("claims before: %+v", before)
	}
	who := `plugin "mem" (pid `
	if agent {
		f, err := os.OpenFile(filepath.Join(h.dir, lockDir, "agent.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		who = fmt.Sprintf("the agent (pid %d)", os.Getpid())
	}
	h.e.Close() // the child opens the state itself
	h.e = nil

	cmd := exec.Command(os.Args[0], "-test.run=^TestPrivateMountNamespaceChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), privateNSEnv+"="+h.dir)
	// CLONE_NEWNS makes os/exec remount / recursively private in the child, as unshare -m does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if noPtrace {
		testproc.WithoutPtrace(cmd)
		cmd.Env = append(cmd.Env, noPtraceChildEnv+"=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child in a private mount namespace: %v\n%s", err, out)
	}
	for _, op := range []string{"reconcile", "claim", "release", "detach"} {
		line := ""
		for l := range strings.Lines(string(out)) {
			if strings.HasPrefix(l, op+": ") {
				line = l
			}
		}
		if !strings.Contains(line, who) || !strings.Contains(line, h.dir) || !strings.Contains(line, "nsenter -t ") {
			t.Errorf("%s in a private mount namespace: %q, want a refusal naming the namespaces, %s..., the state dir %s and nsenter", op, line, who, h.dir)
		}
	}
	h.open(Config{})
	after := h.liveClaims("v1")
	if len(after) != 1 || after[0].State != store.ClaimPublished || after[0].LastError != "" || after[0].Releasing {
		t.Errorf("claims after the child's operations: %+v, want alloc a's claim published as before, and no other", after)
	}
}

// TestPrivateMountNamespaceChild is the child of TestOperationsOnMountsRefusedInAPrivateMountNamespace;
// it does nothing unless started by it. It prints each operation's error, one a line.
func TestPrivateMountNamespaceChild(t *testing.T) {
	ctx := context.Background()
	e := childEngine(t, privateNSEnv, "TestOperationsOnMountsRefusedInAPrivateMountNamespace", Config{})
	if os.Getenv(noPtraceChildEnv) != "" && testproc.HasPtrace() {
		t.Fatal("started without CAP_SYS_PTRACE, and holds it: the test shows nothing")
	}
	var err error
	say := func(op string, err error) {
		fmt.Printf("%s: %v\n", op, strings.ReplaceAll(fmt.Sprint(err), "\n", " "))
	}
	_, err = e.Reconcile(ctx)
	say("reconcile", err)
	_, err = e.Claim(ctx, ClaimRequest{VolumeID: "v1", Alloc: "b", ReadOnly: true})
	say("claim", err)
	_, err = e.Release(ctx, "v1", "a")
	say("release", err)
	_, err = e.Detach(ctx, "v1", true)
	say("detach", err)
	if errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// A process in another mount namespace than its plugin's, whose state dir's mount is in a peer group the plugin's
// namespace shares (unshare --propagation unchanged; a container given the state dir rshared),
// sees the plugin's mounts there: it is let act. One whose
// mount is a slave of another, or private, is not.
func TestMountViewSharedPeerGroup(t *testing.T) {
	root := t.TempDir()
	write := func(pid, ns, mountinfo string) {
		d := filepath.Join(root, pid, "ns")
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(ns, filepath.Join(d, "mnt")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "mountinfo"), []byte(mountinfo), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	host := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"30 22 8:2 / /var rw,relatime shared:7 - ext4 /dev/sda2 rw\n"
	write("1", "mnt:[4026531841]", host)
	swapsGlobals(t, "procRoot")
	old := procRoot
	procRoot = root
	t.Cleanup(func() { procRoot = old })
	for _, c := range []struct {
		name, self string
		ok         bool
	}{
		{"shared with the host's", "122 121 8:2 / /var rw,relatime shared:7 - ext4 /dev/sda2 rw\n", true},
		{"slave of the host's", "122 121 8:2 / /var rw,relatime master:7 - ext4 /dev/sda2 rw\n", false},
		{"private", "122 121 8:2 / /var rw,relatime - ext4 /dev/sda2 rw\n", false},
		{"shared, another group", "122 121 8:2 / /var rw,relatime shared:99 - ext4 /dev/sda2 rw\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.RemoveAll(filepath.Join(root, "self")); err != nil {
				t.Fatal(err)
			}
			write("self", "mnt:[4026532999]", "121 100 8:1 / / rw shared:50 - ext4 /dev/sda1 rw\n"+c.self)
			err := mountView("/var/lib/volctl", 1, `plugin "hp" (pid 1)`)
			if (err == nil) != c.ok {
				t.Fatalf("mountView: %v, want ok %v", err, c.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "mnt:[4026532999]") {
				t.Errorf("error %q does not name this process's namespace", err)
			}
		})
	}
}

// TestMountViewAsksEachPluginServerOnce: the engine asks a plugin's node socket's server for
// its mount namespace once, not before every claim and release (a connection the server sets
// up and tears down each time), and again once the socket is another (the plugin started
// again makes it anew; its ctime changes here).
func TestMountViewAsksEachPluginServerOnce(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	for range 3 {
		if err := h.e.checkMountView(h.ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.e.peerDials.Load(); n != 1 {
		t.Fatalf("the plugin's server was asked %d times for three operations, want once", n)
	}
	time.Sleep(10 * time.Millisecond) // a ctime of its own, on a file system of coarse timestamps
	if err := os.Chmod(h.socket, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.checkMountView(h.ctx, ""); err != nil {
		t.Fatal(err)
	}
	if n := h.e.peerDials.Load(); n != 2 {
		t.Fatalf("after the socket changed the server was asked %d times in all, want twice", n)
	}
}

// With two plugins registered, a claim and a release of a volume of one ask that plugin's
// server only: the other's mounts are not the ones they act on. A group's run, reconcile
// (checkMountView of no volume) and a volume not found as named still ask every plugin.
func TestMountViewAsksOnlyTheVolumesPlugin(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	otherSocket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	h.registerPlugin("other", otherSocket)
	h.create(volume("v1"))
	h.open(Config{Mounts: kernelMounts{}})
	h.claim(ClaimRequest{VolumeID: "v1", Alloc: "a"})
	h.release("v1", "a")
	if n := h.e.peerDials.Load(); n != 1 {
		t.Errorf("a claim and a release of a volume of plugin mem asked %d plugin servers, want mem's alone", n)
	}
	for _, vol := range []string{"", "no-such-volume"} {
		h.open(Config{Mounts: kernelMounts{}})
		if err := h.e.checkMountView(h.ctx, vol); err != nil {
			t.Fatal(err)
		}
		if n := h.e.peerDials.Load(); n != 2 {
			t.Errorf("checkMountView of volume %q asked %d plugin servers, want both", vol, n)
		}
	}
}

// fdlessEnv, set, makes TestRedactWithoutFileDescriptorsChild act: it runs in the child process
// TestRedactingAFailedClaimWithoutFileDescriptors starts.
const fdlessEnv = "VOLCTL_TEST_FDLESS_DIR"

// A command out of file descriptors (`ulimit -n 14` for `volctl volume claim`) had its claim
// fail, and its error, saying which claim was left where and why, replaced by "the error is
// withheld: reading the state to redact secrets from it: ... too many open files": the
// redaction (cli's RedactError, through Redactor) opened a read connection to read the
// secrets, with no descriptor left for it. It reads on the write connection the command has
// open. The child, an engine of its own as a command's, claims through the harness's plugin,
// stopped, then uses up every file descriptor and redacts the error.
func TestRedactingAFailedClaimWithoutFileDescriptors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v1"))
	h.stopServe() // the plugin gone: the claim's error is volctl's words, no plugin message
	h.e.Close()   // the child opens the state itself
	h.e = nil
	cmd := exec.Command(os.Args[0], "-test.run=^TestRedactWithoutFileDescriptorsChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fdlessEnv+"="+h.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `redacted: `) || !strings.Contains(string(out), h.socket) {
		t.Fatalf("the failed claim's error, redacted with no file descriptor left:\n%s", out)
	}
}

// TestRedactWithoutFileDescriptorsChild is the child of
// TestRedactingAFailedClaimWithoutFileDescriptors; it does nothing unless started by it.
func TestRedactWithoutFileDescriptorsChild(t *testing.T) {
	ctx := context.Background()
	e := childEngine(t, fdlessEnv, "TestRedactingAFailedClaimWithoutFileDescriptors", Config{Mounts: kernelMounts{}})
	_, cerr := e.Claim(ctx, ClaimRequest{VolumeID: "v1", Alloc: "a"})
	if cerr == nil {
		t.Fatal("a claim through a plugin stopped succeeded")
	}
	// No descriptor left: the limit just past the highest open one, every one below it taken.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	highest := 0
	for _, ent := range ents {
		var n int
		if _, err := fmt.Sscan(ent.Name(), &n); err == nil {
			highest = max(highest, n)
		}
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = uint64(highest + 1)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var fill []int
	for {
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		fill = append(fill, fd)
	}
	redact, rerr := e.Redactor(ctx)
	for _, fd := range fill {
		syscall.Close(fd)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if rerr != nil {
		fmt.Printf("withheld: %v\n", rerr)
		return
	}
	fmt.Printf("redacted: %s\n", redact(cerr.Error()))
}

// childEngine opens, in a child process a test started, an engine on the state dir the
// environment variable env names, closed when the test ends; without it, the test is skipped:
// only parent starts it.
func childEngine(t *testing.T, env, parent string, cfg Config) *Engine {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip("run by " + parent + " only")
	}
	cfg.StateDir, cfg.Retry = dir, fastRetry
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// A plugin whose ns/mnt link volctl cannot read (no CAP_SYS_PTRACE) is told apart by its mount
// table. One chrooted below every mount point sees an empty table: that tells nothing, and was
// taken for another namespace, refusing every operation of a plugin in volctl's own. One whose
// table lists a mount of volctl's own (its chroot on it), not the state dir's, is in volctl's
// namespace: mount IDs are each mount's own. One listing none of volctl's is another.
func TestMountViewOfAPluginWhoseTableIsPartial(t *testing.T) {
	root := t.TempDir()
	write := func(pid, mountinfo string) {
		if err := os.MkdirAll(filepath.Join(root, pid, "ns"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "mountinfo"), []byte(mountinfo), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "self", "ns"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("mnt:[4026531841]", filepath.Join(root, "self", "ns", "mnt")); err != nil {
		t.Fatal(err)
	}
	write("self", "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"+
		"30 22 8:2 / /var rw,relatime - ext4 /dev/sda2 rw\n"+
		"31 22 8:3 / /srv rw,relatime - ext4 /dev/sda3 rw\n")
	swapsGlobals(t, "procRoot")
	old := procRoot
	procRoot = root
	t.Cleanup(func() { procRoot = old })
	for _, c := range []struct {
		name, theirs string
		ok           bool
	}{
		{"chrooted below every mount point", "", true},
		{"chrooted on another mount of volctl's", "31 22 8:3 /jail / rw,relatime - ext4 /dev/sda3 rw\n", true},
		{"in another namespace", "122 121 8:2 / /var rw,relatime - ext4 /dev/sda2 rw\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			write("1", c.theirs) // its ns/mnt missing: unreadable here
			err := mountView("/var/lib/volctl", 1, `plugin "hp" (pid 1)`)
			if (err == nil) != c.ok {
				t.Fatalf("mountView: %v, want ok %v", err, c.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "lists none of the mounts here") {
				t.Errorf("error %q does not say why the namespace is another", err)
			}
		})
	}
}
