package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestGroupStatusDoesNotCallReadyAnAllocWhoseBindIsGone: a group's alloc held both its claims;
// one volume_mount was unmounted by hand and a file written in the bare directory. The `group
// run` again failed the alloc (the bind would hide "x") and kept its claims, as designed; right
// after, `group status` showed the alloc ready, no error, its bind listed as mounted, the run's
// recorded error hidden because the alloc held every claim: a script polling status would start
// the task on the host's directory. The bind is marked not mounted and the run's error shown.
// Real mounts, as root. Found by helper review72.
func TestGroupStatusDoesNotCallReadyAnAllocWhoseBindIsGone(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	h.createWriterVolume(t, "logs")
	dir := hostpathtest.MountDir(t)
	logs := filepath.Join(dir, "logs")
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{writerBlock("d", "data"), writerBlock("l", "logs")},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(dir, "app")}, {Volume: "l", Destination: logs}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	if err := unix.Unmount(logs, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := h.e.RunGroup(h.ctx, g)
	if err == nil || !errors.Is(err, ErrConflict) || len(info.Allocs) != 1 || info.Allocs[0].Error == "" {
		t.Fatalf("group run again over a destination now holding a file = %+v, %v; want the alloc failed", info, err)
	}
	if m := mountsUnder(t, logs); len(m) != 0 {
		t.Fatalf("mounts at %s: %v; want none (the bind was refused)", logs, m)
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	a := gs[0].Allocs[0]
	for _, c := range a.Claims {
		for _, b := range c.Binds {
			if want := b.Destination == logs; b.Unbound != want {
				t.Errorf("group status: volume_mount %s of volume %s marked unbound %v, want %v", b.Destination, c.VolumeID, b.Unbound, want)
			}
		}
	}
	ready := len(a.Claims) > 0 && len(a.Missing) == 0 && !gs[0].Lacks(a)
	for _, c := range a.Claims {
		ready = ready && c.AtRest()
	}
	var shownAt []string
	for _, c := range a.Claims {
		for _, b := range c.Binds {
			shownAt = append(shownAt, b.Destination)
		}
	}
	if ready && a.Error == "" {
		t.Errorf("group status right after the run that failed alloc %s (%q): state %q, the alloc counted ready (no error, nothing missing, claims at rest), "+
			"MOUNTED AT %s, though nothing is mounted at %s; want it not ready, or the run's error shown", a.Name, info.Allocs[0].Error, gs[0].State,
			strings.Join(shownAt, ", "), logs)
	}
}

// TestFailedGroupInterruptedBeforeItsAllocsStaysFailed: a group whose every alloc failed reads
// "failed" with each alloc's error. A `group run` again interrupted once it recorded the group
// and before it ran any alloc rewrote the record at its start, dropping the errors of allocs it
// never ran, and recorded none: the group read "running", its alloc holding nothing with no
// reason; and its error said "interrupted before the transaction began, nothing written" of a
// run that had written the group. Found by helper review72.
func TestFailedGroupInterruptedBeforeItsAllocsStaysFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	g := spec.Group{Name: "db", Count: 1, Volumes: []spec.VolumeRequest{writerBlock("d", "nowhere")}}
	if _, err := h.e.RunGroup(h.ctx, g); err == nil {
		t.Fatal("group run of a volume not registered succeeded")
	}
	gs, err := h.e.Groups(h.ctx, "db")
	if err != nil || gs[0].State != GroupFailed || gs[0].Allocs[0].Error == "" {
		t.Fatalf("group status after the failed run = %+v, %v; want failed", gs, err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.e.failpointHook = func(name string) {
		if name == "group:recorded" {
			cancel()
		}
	}
	_, runErr := h.e.RunGroup(ctx, g)
	h.e.failpointHook = nil
	if runErr == nil || !errors.Is(runErr, context.Canceled) {
		t.Fatalf("interrupted run = %v", runErr)
	}
	if msg := runErr.Error(); strings.Contains(msg, "nothing written") || !strings.Contains(msg, "was not run") || !strings.Contains(msg, "volctl group run") {
		t.Errorf("interrupted run = %v\nwant it to say the alloc was not run and what finishes the group, not that nothing was written (the group's record was)", runErr)
	}
	gs, err = h.e.Groups(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if a := gs[0].Allocs[0]; gs[0].State != GroupFailed && a.Error == "" && len(a.Claims) == 0 {
		t.Errorf("group status after a run interrupted before it ran any alloc: state %q, alloc %s holding nothing with no error; "+
			"want it still failed with the error of the run that failed it (the interrupted run did not run it: %v)", gs[0].State, a.Name, runErr)
	}
}
