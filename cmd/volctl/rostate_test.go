package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// readOnlyBind bind-mounts dir read-only at a new directory and returns it; the mount goes when
// the test ends. It skips, saying why, where the test may not mount.
func readOnlyBind(t *testing.T, dir string) string {
	t.Helper()
	hostpathtest.RequireMount(t)
	ro := hostpathtest.ShortDir(t)
	if err := unix.Mount(dir, ro, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind-mounting %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(ro, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", ro, err)
		}
	})
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("remounting the bind of %s read-only: %v", dir, err)
	}
	return ro
}

// A state dir on a read-only file system (a backup mounted read-only, a snapshot) can be read:
// the read commands work there, and show what the last command committed, which is still in
// the WAL the writer's exit left (CloseAtExit). Everything that writes fails, naming the state
// dir and that its file system is read-only; nothing is written.
func TestReadOnlyStateDir(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t)
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())))
	env := &hostEnv{t: t, state: hostpathtest.MountDir(t), socket: socket}
	must := func(args ...string) {
		t.Helper()
		if out, err := env.runBinary(bin, nil, args...); err != nil {
			t.Fatalf("volctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	must("plugin", "register", "--id", "hp", "--socket", socket)
	must("volume", "create", writeVolumeSpec(t, "v", spec.SingleNodeWriter))
	must("volume", "create", writeVolumeSpec(t, "w", spec.SingleNodeWriter))
	must("volume", "claim", "v", "--alloc", "web-0") // in the WAL the command left
	wal := filepath.Join(env.state, store.FileName+"-wal")
	if fi, err := os.Stat(wal); err != nil || fi.Size() == 0 {
		t.Fatalf("the WAL after the last command: %v (size %d), want it left with the commits", err, sizeOf(fi))
	}
	// An agent ran here before: its lock file is there to open.
	if err := os.WriteFile(filepath.Join(env.state, "locks", "agent.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshotFiles(t, env.state)

	env.state = readOnlyBind(t, env.state)
	for _, args := range [][]string{
		{"status"}, {"status", "--json"},
		{"volume", "status"}, {"volume", "status", "v"}, {"volume", "status", "v", "--json"},
		{"plugin", "status"}, {"plugin", "status", "hp", "--json"},
		{"events"}, {"group", "status"}, {"volume", "snapshot", "list"},
	} {
		out, err := env.runBinary(bin, nil, args...)
		if err != nil {
			t.Errorf("volctl %s on a read-only state dir: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		if args[0] == "volume" && args[1] == "status" && len(args) > 2 && !strings.Contains(out, "web-0") {
			t.Errorf("volctl %s on a read-only state dir does not show the claim of web-0 committed last:\n%s", strings.Join(args, " "), out)
		}
	}
	for _, args := range [][]string{
		{"volume", "claim", "w", "--alloc", "web-1"},
		{"volume", "release", "v", "--alloc", "web-0"},
		{"volume", "delete", "w", "--yes"},
		{"reconcile"},
	} {
		out, err := env.runBinary(bin, nil, args...)
		if err == nil {
			t.Errorf("volctl %s on a read-only state dir succeeded:\n%s", strings.Join(args, " "), out)
			continue
		}
		if !strings.Contains(out, env.state) || !strings.Contains(out, "read-only file system") || strings.Contains(out, "Nothing to do") || strings.Contains(out, "next reconcile") {
			t.Errorf("volctl %s on a read-only state dir: %v\n%s\nwant an error naming %s and its read-only file system", strings.Join(args, " "), err, out, env.state)
		}
	}
	// The agent writes from its start (restore, health, GC): it fails to start, naming why.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	agent := exec.CommandContext(ctx, bin, "agent")
	agent.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1")
	out, err := agent.CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(out), env.state) || !strings.Contains(string(out), "read-only file system") {
		t.Errorf("volctl agent on a read-only state dir: %v (context: %v)\n%s\nwant it to refuse to start, naming %s and its read-only file system", err, ctx.Err(), out, env.state)
	}
	// A backup of the three files alone (no locks/ beside them), mounted read-only, reads too.
	backup := hostpathtest.ShortDir(t)
	for _, name := range []string{store.FileName, store.FileName + "-wal", store.FileName + "-shm"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(wal), name))
		if err == nil {
			err = os.WriteFile(filepath.Join(backup, name), b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	env.state = readOnlyBind(t, backup)
	if out, err := env.runBinary(bin, nil, "volume", "status", "v"); err != nil || !strings.Contains(out, "web-0") {
		t.Errorf("volctl volume status v on a read-only backup of the database files: %v\n%s\nwant the claim of web-0", err, out)
	}
	if after := snapshotFiles(t, filepath.Dir(wal)); !equalFiles(before, after) {
		t.Errorf("the state dir's files changed under a read-only mount:\nbefore %v\nafter  %v", before, after)
	}
}

// snapshotFiles is the names and sizes of the files directly in dir.
func snapshotFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !fi.IsDir() {
			out[e.Name()] = fi.Size()
		}
	}
	return out
}

func equalFiles(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
