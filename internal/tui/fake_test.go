package tui

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// FixedRenderer is a renderer with a given profile and a dark background, for tests.
func FixedRenderer(p termenv.Profile) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(p)
	r.SetHasDarkBackground(true)
	return r
}

// fakeEngine is the dashboard's engine in Update-level tests: fixed data, recorded calls and
// injectable errors.
type fakeEngine struct {
	mu      sync.Mutex
	data    engine.Dashboard
	volumes map[string]engine.VolumeInfo
	probed  []engine.PluginInfo // what PluginStatus answers; nil: data.Plugins
	calls   []string

	dashErr, releaseErr, detachErr, deleteErr error
	reconciled                                engine.ReconcileReport // what Reconcile answers
	reconcileCut                              error                  // Reconcile's error for a pass cut short (the report not complete)
	detachWarnings                            []string               // what Detach warns of
}

func (f *fakeEngine) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeEngine) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeEngine) Dashboard(_ context.Context, events int) (engine.Dashboard, error) {
	f.record("Dashboard(%d)", events)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.data, f.dashErr
}

func (f *fakeEngine) Volume(_ context.Context, id string) (engine.VolumeInfo, error) {
	f.record("Volume(%s)", id)
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.volumes[id]
	if !ok {
		// One without a fixed detail is its summary, as the engine's read has it.
		i := slices.IndexFunc(f.data.Volumes, func(s engine.VolumeSummary) bool { return s.ID == id })
		if i < 0 {
			return v, fmt.Errorf("volume %q: %w", id, engine.ErrNotFound)
		}
		v = engine.VolumeInfo{VolumeSummary: f.data.Volumes[i], PluginHealthy: true, PluginReady: true}
	}
	v.Claims = nil // its live claims now, as the engine reads them
	for _, c := range f.data.Claims {
		if c.VolumeID == id {
			v.Claims = append(v.Claims, c)
		}
	}
	return v, nil
}

func (f *fakeEngine) PluginStatus(_ context.Context, id string) ([]engine.PluginInfo, error) {
	f.record("PluginStatus(%s)", id)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.probed != nil {
		f.data.Plugins = f.probed // a probe records health in the store
	}
	return f.data.Plugins, nil
}

func (f *fakeEngine) Release(_ context.Context, vol, alloc string) (engine.ReleaseResult, error) {
	f.record("Release(%s, %s)", vol, alloc)
	if f.releaseErr != nil {
		return engine.ReleaseResult{}, f.releaseErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.data.Claims)
	f.data.Claims = slices.DeleteFunc(f.data.Claims, func(c engine.ClaimInfo) bool { return c.VolumeID == vol && c.Alloc == alloc })
	return engine.ReleaseResult{Released: len(f.data.Claims) < n}, nil
}

func (f *fakeEngine) Detach(_ context.Context, vol string, force bool) (engine.DetachResult, error) {
	f.record("Detach(%s, %v)", vol, force)
	if f.detachErr != nil {
		return engine.DetachResult{}, f.detachErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res := engine.DetachResult{Warnings: f.detachWarnings}
	f.data.Claims = slices.DeleteFunc(f.data.Claims, func(c engine.ClaimInfo) bool {
		if c.VolumeID == vol {
			res.Released = append(res.Released, c)
			return true
		}
		return false
	})
	return res, nil
}

func (f *fakeEngine) DeleteVolume(_ context.Context, id string) error {
	f.record("DeleteVolume(%s)", id)
	if f.deleteErr != nil {
		return f.deleteErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data.Volumes = slices.DeleteFunc(f.data.Volumes, func(v engine.VolumeSummary) bool { return v.ID == id })
	delete(f.volumes, id)
	return nil
}

func (f *fakeEngine) Reconcile(context.Context) (engine.ReconcileReport, error) {
	f.record("Reconcile()")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reconcileCut != nil {
		return f.reconciled, f.reconcileCut
	}
	f.reconciled.Complete = true // a pass that looked at everything
	if !f.reconciled.OK() {
		// As engine.Reconcile does: the report, and an error saying problems remain.
		return f.reconciled, fmt.Errorf("reconcile: %d problem(s) remain", len(f.reconciled.Problems))
	}
	return f.reconciled, nil
}

// testNow is the pinned clock of every test.
var testNow = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return testNow.Add(-d) }

// fixture is a host with three plugins (one down, one not ready), six volumes in every state
// worth drawing, claims at rest and not, and some events.
func fixture() *fakeEngine {
	sw := spec.SingleNodeWriter
	fs := spec.FileSystem
	target := func(alloc, vol, usage string) string {
		return "/var/lib/volctl/publish/" + alloc + "/" + vol + "/" + usage
	}
	claims := []engine.ClaimInfo{
		{ID: 1, VolumeID: "mysql-0", Alloc: "web[0]", Group: "web", Mode: "write", AccessMode: sw, AttachmentMode: fs,
			State: "published", TargetPath: target("web[0]", "mysql-0", "rw-file-system-single-node-writer"),
			CreatedAt: ago(3 * time.Hour), UpdatedAt: ago(3 * time.Hour)},
		{ID: 2, VolumeID: "mysql-1", Alloc: "web[1]", Group: "web", Mode: "write", AccessMode: sw, AttachmentMode: fs,
			State: "published", TargetPath: target("web[1]", "mysql-1", "rw-file-system-single-node-writer"),
			CreatedAt: ago(3 * time.Hour), UpdatedAt: ago(3 * time.Hour),
			Binds: []engine.Bind{{Destination: "/srv/mysql", PropagationMode: "private"}}},
		{ID: 3, VolumeID: "shared-media", Alloc: "render-0", Mode: "read", AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: fs,
			State: "published", TargetPath: target("render-0", "shared-media", "ro-file-system-multi-node-reader-only"),
			CreatedAt: ago(40 * time.Minute), UpdatedAt: ago(40 * time.Minute)},
		{ID: 4, VolumeID: "shared-media", Alloc: "render-1", Mode: "read", AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: fs,
			State: "published", TargetPath: target("render-1", "shared-media", "ro-file-system-multi-node-reader-only"),
			CreatedAt: ago(39 * time.Minute), UpdatedAt: ago(39 * time.Minute)},
		{ID: 5, VolumeID: "pg-data", Alloc: "db-0", Mode: "write", AccessMode: sw, AttachmentMode: spec.BlockDevice,
			State: "node-staged", NeedsReconcile: true, TargetPath: target("db-0", "pg-data", "rw-block-device-single-node-writer"),
			LastRPC: "NodePublishVolume", LastCode: "Unavailable", LastError: "connection refused",
			CreatedAt: ago(90 * time.Second), UpdatedAt: ago(30 * time.Second)},
	}
	volumes := []engine.VolumeSummary{
		{ID: "mysql-0", Namespace: "default", Name: "mysql", PluginID: "hostpath", State: "ready", Schedulable: true,
			AccessMode: sw, AttachmentMode: fs, CapacityBytes: 10 << 30, WriteClaims: 1, CreatedAt: ago(26 * time.Hour)},
		{ID: "mysql-1", Namespace: "default", Name: "mysql", PluginID: "hostpath", State: "ready", Schedulable: true,
			AccessMode: sw, AttachmentMode: fs, CapacityBytes: 10 << 30, WriteClaims: 1},
		{ID: "pg-data", Namespace: "default", Name: "postgres", PluginID: "ceph", State: "ready", Schedulable: false,
			AccessMode: sw, AttachmentMode: spec.BlockDevice, CapacityBytes: 100 << 30, WriteClaims: 1, Unsettled: 1},
		{ID: "scratch", Namespace: "default", Name: "scratch", PluginID: "hostpath", State: "ready", Schedulable: true,
			CapacityBytes: 1 << 30},
		{ID: "shared-media", Namespace: "default", Name: "media", PluginID: "nfs", State: "ready", Schedulable: true,
			AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: fs, CapacityBytes: 500 << 30, ReadClaims: 2},
		{ID: "tmp-build", Namespace: "default", Name: "tmp-build", PluginID: "hostpath", State: "creating"},
	}
	plugins := []engine.PluginInfo{
		{ID: "ceph", Type: spec.PluginMonolith, ControllerSocket: "/run/csi/ceph.sock", NodeSocket: "/run/csi/ceph.sock",
			Provider: "rbd.csi.ceph.com", Version: "3.11.0", NodeID: "node-1",
			Capabilities: engine.CapabilityNames{Plugin: []string{"CONTROLLER_SERVICE"},
				Controller: []string{"CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "EXPAND_VOLUME"},
				Node:       []string{"STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"}},
			LastError: "Probe: Unavailable: connection refused", ProbedAt: ago(5 * time.Second), Volumes: 1},
		{ID: "hostpath", Type: spec.PluginMonolith, ControllerSocket: "/run/volctl/hostpath.sock", NodeSocket: "/run/volctl/hostpath.sock",
			Provider: "hostpath.volctl.dev", Version: "0.1.0", NodeID: "node-1",
			Capabilities: engine.CapabilityNames{Plugin: []string{"CONTROLLER_SERVICE", "VOLUME_EXPANSION_ONLINE"},
				Controller: []string{"CREATE_DELETE_VOLUME", "CREATE_DELETE_SNAPSHOT", "CLONE_VOLUME", "EXPAND_VOLUME"},
				Node:       []string{"STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS"}},
			Healthy: true, Ready: true, ProbeLatency: engine.Duration(1200 * time.Microsecond),
			ProbedAt: ago(5 * time.Second), FingerprintedAt: ago(3 * time.Hour), Volumes: 4},
		{ID: "nfs", Type: spec.PluginNode, NodeSocket: "/run/csi/nfs.sock",
			Provider: "nfs.csi.k8s.io", Version: "4.6.0", NodeID: "node-1",
			Capabilities: engine.CapabilityNames{Plugin: []string{}, Controller: []string{}, Node: []string{"GET_VOLUME_STATS"}},
			Healthy:      true, Ready: false, ProbeLatency: engine.Duration(800 * time.Microsecond),
			LastError: "plugin says it is not ready yet", ProbedAt: ago(5 * time.Second), Volumes: 1},
	}
	events := []engine.EventInfo{
		{ID: 9, At: ago(30 * time.Second), Kind: "claim-error", VolumeID: "pg-data", Alloc: "db-0", PluginID: "ceph",
			RPC: "NodePublishVolume", Code: "Unavailable", Message: `claim "pg-data" for alloc "db-0": NodePublishVolume: Unavailable: connection refused (left for reconcile)`},
		{ID: 8, At: ago(35 * time.Second), Kind: "plugin-health", PluginID: "ceph", Message: `plugin "ceph" became unhealthy: Probe: Unavailable: connection refused`},
		{ID: 7, At: ago(90 * time.Second), Kind: "claim", VolumeID: "pg-data", Alloc: "db-0", Message: `alloc "db-0" claimed volume "pg-data" for write`},
		{ID: 6, At: ago(39 * time.Minute), Kind: "claim", VolumeID: "shared-media", Alloc: "render-1", Message: `alloc "render-1" claimed volume "shared-media" for read`},
		{ID: 5, At: ago(40 * time.Minute), Kind: "claim", VolumeID: "shared-media", Alloc: "render-0", Message: `alloc "render-0" claimed volume "shared-media" for read`},
		{ID: 4, At: ago(3 * time.Hour), Kind: "claim", VolumeID: "mysql-1", Alloc: "web[1]", Message: `alloc "web[1]" claimed volume "mysql-1" for write`},
		{ID: 3, At: ago(3 * time.Hour), Kind: "claim", VolumeID: "mysql-0", Alloc: "web[0]", Message: `alloc "web[0]" claimed volume "mysql-0" for write`},
		{ID: 2, At: ago(26 * time.Hour), Kind: "volume-create", VolumeID: "mysql-0", PluginID: "hostpath", Message: `volume "mysql-0" created (external ID "vol-7f3a")`},
		{ID: 1, At: ago(50 * time.Hour), Kind: "plugin-register", PluginID: "hostpath", Message: `plugin "hostpath" registered: hostpath.volctl.dev 0.1.0`},
	}
	mysql0 := engine.VolumeInfo{
		VolumeSummary: volumes[0], ExternalID: "vol-7f3a", CSIName: "mysql-0-5d41402a", Provider: "hostpath.volctl.dev",
		ProviderVersion: "0.1.0", PluginHealthy: true, PluginReady: true,
		RequestedMin: 10 << 30, RequestedMax: 20 << 30,
		Capabilities:       []spec.Capability{{AccessMode: sw, AttachmentMode: fs}, {AccessMode: sw, AttachmentMode: spec.BlockDevice}},
		MountOptions:       &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "password=hunter2"}},
		TopologyRequest:    &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "lab-1"}}}},
		AccessibleTopology: []spec.Topology{{Segments: map[string]string{"zone": "lab-1", "rack": "r2"}}},
		Secrets:            spec.Secrets{"token": "s3cr3t-value", "user": "admin-secret"},
		Parameters:         map[string]string{"tier": "fast"},
		Context:            map[string]string{"path": "/srv/volctl/vol-7f3a"},
		Staged:             true, Claims: claims[:1], UpdatedAt: ago(3 * time.Hour),
	}
	groups := []engine.GroupInfo{
		{Name: "web", State: "running", Count: 2, Allocs: []engine.AllocInfo{
			{Name: "web[0]", Index: 0, Claims: claims[0:1]}, {Name: "web[1]", Index: 1, Claims: claims[1:2]}}},
		{Name: "nightly", State: "running", Count: 1, Allocs: []engine.AllocInfo{
			{Name: "nightly[0]", Index: 0, Claims: []engine.ClaimInfo{}, Error: `claim "pg-data": volume "pg-data" is held for write by alloc "db-0"`}}},
	}
	return &fakeEngine{
		data:    engine.Dashboard{Volumes: volumes, Claims: claims, Plugins: plugins, Events: events, Groups: groups},
		volumes: map[string]engine.VolumeInfo{"mysql-0": mysql0, "scratch": {VolumeSummary: volumes[3], PluginHealthy: true, PluginReady: true}},
	}
}

// The secret values in the fixture: none may ever be drawn.
var fixtureSecrets = []string{"s3cr3t-value", "admin-secret", "password=hunter2", "noatime"}

// timers records what the model scheduled instead of sleeping through it.
type timers struct{ scheduled []time.Duration }

// harness is a model on a fake engine with its commands run synchronously and its timers
// recorded.
type harness struct {
	t      testing.TB
	m      *Model
	fake   *fakeEngine
	timers *timers
	quit   bool
}

func newHarness(t testing.TB, eng Engine, opts Options) *harness {
	t.Helper()
	opts.Engine = eng
	fake, _ := eng.(*fakeEngine)
	if opts.Now == nil {
		opts.Now = func() time.Time { return testNow }
	}
	if opts.Renderer == nil {
		opts.Renderer = FixedRenderer(termenv.Ascii)
	}
	h := &harness{t: t, fake: fake, timers: &timers{}}
	h.m = New(context.Background(), opts)
	h.m.c.after = func(d time.Duration, _ func() tea.Msg) tea.Cmd {
		h.timers.scheduled = append(h.timers.scheduled, d)
		return nil
	}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.run(h.m.Init())
	return h
}

// send delivers msg and runs what it asks for.
// afterKeys is a harness over the fixture at 80x24, after these keys.
func afterKeys(t testing.TB, keys ...string) *harness {
	t.Helper()
	h := newHarness(t, fixture(), Options{})
	h.keys(keys...)
	return h
}

func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

// run runs cmd and every command that follows from it, to quiescence. Timers are recorded by
// the harness, so everything left is engine work.
func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	queue := []tea.Cmd{cmd}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 1000 {
			h.t.Fatal("commands do not settle")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case tea.QuitMsg:
			h.quit = true
		default:
			_, next := h.m.Update(msg)
			queue = append(queue, next)
		}
	}
}

// keys types each key in turn: a name bubbletea knows ("enter", "esc", "ctrl+c", "down"), or
// runes.
func (h *harness) keys(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		h.send(keyMsg(k))
	}
}

func keyMsg(k string) tea.KeyMsg {
	named := map[string]tea.KeyType{
		"enter": tea.KeyEnter, "esc": tea.KeyEscape, "tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab,
		"up": tea.KeyUp, "down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
		"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "home": tea.KeyHome, "end": tea.KeyEnd,
		"backspace": tea.KeyBackspace, "ctrl+c": tea.KeyCtrlC, "ctrl+u": tea.KeyCtrlU, "ctrl+w": tea.KeyCtrlW,
		"space": tea.KeySpace,
	}
	if t, ok := named[k]; ok {
		return tea.KeyMsg{Type: t}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// viewKeys lists the keys of the active table's rows in view order.
func (h *harness) viewKeys() []string {
	t := h.m.tabs[h.m.active]
	out := make([]string, len(t.view))
	for i, r := range t.view {
		out[i] = t.rows[r].key
	}
	return out
}

func (h *harness) selected() string {
	if r := h.m.tabs[h.m.active].selected(); r != nil {
		return r.key
	}
	return ""
}
