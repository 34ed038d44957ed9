package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/store/storetest"
)

// requireMount skips a test that claims where bind mounts are not allowed: the harness's
// plugin cannot mount there, and the engine refuses a published target that is not a mount
// point.
func requireMount(t *testing.T) {
	t.Helper()
	hostpathtest.RequireMount(t)
}

// cliHarness is a real engine on a temp state dir with an in-memory CSI plugin ("mem")
// registered on a real socket, for run functions called directly. Where bind mounts are
// allowed the plugin mounts a directory of its own at each target (NewMountingMemPlugin), as
// the engine, which reads the kernel's mount table, insists; elsewhere it mounts nothing, and a
// test that claims calls requireMount first, which skips it saying why.
type cliHarness struct {
	ctx   context.Context
	state string
	e     *engine.Engine
	mem   *csitest.MemPlugin
	// stop stops the plugin's server, as a killed plugin process would stop.
	stop func()
}

func newCLIHarness(t *testing.T) *cliHarness {
	t.Helper()
	return newCLIHarnessServing(t)
}

// newCLIHarnessServing is newCLIHarness with opts added to the plugin's server (an
// interceptor making it a hostile plugin).
func newCLIHarnessServing(t *testing.T, opts ...csitest.ServeOption) *cliHarness {
	t.Helper()
	return newCLIHarnessConfig(t, nil, opts...)
}

// newCLIHarnessConfig is newCLIHarnessServing with the plugin's config changed by mutate first.
func newCLIHarnessConfig(t *testing.T, mutate func(*csitest.MemConfig), opts ...csitest.ServeOption) *cliHarness {
	t.Helper()
	ctx := context.Background()
	h := &cliHarness{ctx: ctx, state: filepath.Join(t.TempDir(), "state")}
	cfg := csitest.DefaultMemConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	if hostpathtest.CanMount() == nil {
		h.mem = csitest.NewMountingMemPlugin(t, cfg)
	} else {
		h.mem = csitest.NewMemPlugin(cfg)
	}
	var socket string
	socket, h.stop = csitest.Serve(t, append([]csitest.ServeOption{csitest.WithServer(h.mem)}, opts...)...)
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	return h
}

// openEngine opens an engine on the state dir, closed when the test ends. A state dir with no
// database yet starts from a copy of the schema database (storetest), as Open would make it.
func openEngine(t *testing.T, state string) *engine.Engine {
	t.Helper()
	if _, err := os.Stat(filepath.Join(state, store.FileName)); errors.Is(err, fs.ErrNotExist) {
		storetest.Seed(t, state)
	}
	e, err := engine.Open(context.Background(), engine.Config{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// engine is what the commands' Engine field takes.
func (h *cliHarness) engine(context.Context) (*engine.Engine, error) { return h.e, nil }

func (h *cliHarness) createVolume(t *testing.T, id string, mode spec.AccessMode) engine.VolumeInfo {
	t.Helper()
	v, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: mode, AttachmentMode: spec.FileSystem}}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// claim claims a volume for alloc.
func (h *cliHarness) claim(t *testing.T, vol, alloc string) {
	t.Helper()
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: vol, Alloc: alloc}); err != nil {
		t.Fatal(err)
	}
}

// runGroupOn runs group "api", one task group whose volume "d" is the volume source, claimed
// multi-node-multi-writer (as alloc "api[0]").
func (h *cliHarness) runGroupOn(t *testing.T, source string) {
	t.Helper()
	if _, err := h.e.RunGroup(h.ctx, apiGroup(t, source)); err != nil {
		t.Fatal(err)
	}
}

// apiGroup is group "api" as its spec reads: one alloc, one volume block per source ("d" for
// the first, "d1", "d2" for the next), each claimed multi-node-multi-writer.
func apiGroup(t *testing.T, sources ...string) spec.Group {
	t.Helper()
	text := `group "api" {`
	for i, source := range sources {
		name := "d"
		if i > 0 {
			name = fmt.Sprintf("d%d", i)
		}
		text += `
  volume "` + name + `" {
    type            = "csi"
    source          = "` + source + `"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }`
	}
	g, diags := spec.NewParser().ParseGroup("g.hcl", []byte(text+"\n}"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return *g
}

// serveMem serves mem (with opts: an interceptor, faults) on a socket, opens an engine on a
// temp state dir and registers the plugin as "mem" (a monolith); it returns the socket, the
// engine and what the commands' Engine field takes.
func serveMem(t *testing.T, mem *csitest.MemPlugin, opts ...csitest.ServeOption) (string, *engine.Engine, func(context.Context) (*engine.Engine, error)) {
	t.Helper()
	socket, _ := csitest.Serve(t, append([]csitest.ServeOption{csitest.WithServer(mem)}, opts...)...)
	e := openEngine(t, filepath.Join(t.TempDir(), "state"))
	if _, err := e.RegisterPlugin(context.Background(), spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	return socket, e, func(context.Context) (*engine.Engine, error) { return e, nil }
}

// inStateDir has f take dir for its state dir from VOLCTL_STATE_DIR, as for a user who exported
// it: what it advises is then bare, the user's shell giving the state dir to what is pasted
// (given --state-dir, the advice carries it: TestAdviceCarriesTheStateDirGiven).
func inStateDir(f *Factory, dir string) {
	f.lookupEnv = func(k string) (string, bool) {
		if k == "VOLCTL_STATE_DIR" {
			return dir, true
		}
		return os.LookupEnv(k)
	}
}

// runReported runs volctl with args on the harness's state dir (inStateDir), as main does (the error
// redacted and reported), and returns the exit status and what went to stdout and stderr.
func (h *cliHarness) runReported(args ...string) (code int, out, errOut string) {
	ios, _, o, eo := iostreams.Test()
	f := NewFactory(ios)
	inStateDir(f, h.state)
	root := NewRootCmd(f)
	root.SetArgs(args)
	err := root.Execute()
	code = f.Report(f.RedactError(h.ctx, err))
	f.Close()
	return code, o.String(), eo.String()
}

// createSingleWriter creates single-node-writer volumes with these IDs on e's "mem" plugin.
func createSingleWriter(t *testing.T, e *engine.Engine, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := e.CreateVolume(context.Background(), spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem",
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
			t.Fatal(err)
		}
	}
}
