package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// createWriter creates a single-node-writer volume id of 1 MiB on plugin mem.
func createWriter(t *testing.T, e *engine.Engine, id string) {
	t.Helper()
	if _, err := e.CreateVolume(context.Background(), spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
}

// TestDashboardPendingExpansionOfAHandedOverVolumeSaysItWaitsForTheTakeBack: a volume handed
// over to Nomad (forced) with a ControllerExpandVolume answer not recorded: reconcile leaves the
// expansion for the take-back and `volume status` says so (round 71), while the dashboard's
// detail, which the design has show it as `volume status` does, advised "volctl reconcile sends
// it again". One wording serves both now (VolumeInfo.ExpansionPendingWay). Found by helper
// review72.
func TestDashboardPendingExpansionOfAHandedOverVolumeSaysItWaitsForTheTakeBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, _ := realEngineIn(t, dir, nil)
	createWriter(t, e, "db")
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(ctx, func(tx *store.Tx) error { return tx.Volumes().SetExpansionIntent("db", 8<<30, 0) })
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	if _, err := e.HandOver(ctx, "db", engine.HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	// What the dashboard advises, run: the expansion stays pending.
	if _, err := e.Reconcile(ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if v, err := e.Volume(ctx, "db"); err != nil || v.ExpansionPending != 8<<30 || v.Handover == nil {
		t.Fatalf("after reconcile: pending %d, handover %v, %v", v.ExpansionPending, v.Handover, err)
	}

	h := newHarness(t, e, Options{})
	h.send(tea.WindowSizeMsg{Width: 200, Height: 60})
	h.keys("enter")
	var row []string
	lines := strings.Split(h.m.View(), "\n")
	for i, l := range lines {
		if !strings.Contains(l, "Expansion Pending") {
			continue
		}
		row = append(row, strings.TrimSpace(l))
		for _, more := range lines[i+1:] {
			if !strings.HasPrefix(more, strings.Repeat(" ", 2+keyWidth+2)) {
				break
			}
			row = append(row, strings.TrimSpace(more))
		}
		break
	}
	text := strings.Join(row, " ")
	if text == "" {
		t.Fatalf("no Expansion Pending row in the volume detail:\n%s", h.m.View())
	}
	if !strings.Contains(text, "nomad release") || strings.Contains(text, "volctl reconcile sends it again") {
		t.Errorf("dashboard's Expansion Pending row of a volume handed over to Nomad:\n%s\nwant it to say the expansion waits for the take-back (`volctl nomad release db`), as `volume status db` does, not advise the reconcile that just left it", text)
	}
}

// TestDashboardGroupWhoseVolumeMountIsNotMountedIsSaid: a group's alloc held its claims at rest
// with nothing mounted at its volume_mount's destination any more: `group status` said so, and
// the dashboard's group row and detail, read through engine.Dashboard, showed a healthy group.
// Found by helper review72.
func TestDashboardGroupWhoseVolumeMountIsNotMountedIsSaid(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	createWriter(t, e, "data")
	mdir := hostpathtest.MountDir(t)
	dest := filepath.Join(mdir, "app")
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: dest}}}
	if _, err := e.RunGroup(ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.StopGroup(ctx, "web") })
	if err := unix.Unmount(dest, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dest); err != nil {
		t.Fatal(err)
	}
	gs, err := e.Groups(ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 || gs[0].Allocs[0].Error == "" {
		t.Fatalf("group status: %+v, %v; want the alloc's error for its unmounted volume_mount", gs, err)
	}
	statusSays := gs[0].Allocs[0].Error

	h := newHarness(t, e, Options{})
	h.send(tea.WindowSizeMsg{Width: 200, Height: 60})
	h.keys("5")
	list := h.m.View()
	h.keys("enter")
	detail := h.m.View()
	said := func(s string) bool {
		return strings.Contains(s, "has nothing mounted")
	}
	if !said(list) && !said(detail) {
		t.Errorf("`group status web` says of alloc web[0]: %q\nbut the dashboard's group list:\n%s\nand its detail:\n%s\nsay nothing of the volume_mount %s not mounted", statusSays, trimmed(list), trimmed(detail), dest)
	}
}

// trimmed is a frame's non-blank lines, their trailing spaces cut.
func trimmed(frame string) string {
	var out []string
	for _, l := range strings.Split(frame, "\n") {
		if l = strings.TrimRight(l, " "); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
