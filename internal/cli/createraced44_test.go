package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// Two volctl processes create the same volume from the same spec at once: one sends
// CreateVolume, the other waits for the volume's lock and finds the volume made, and says so
// ("unchanged"). Before, the command read the volume before its create, outside the lock, and
// the one that waited said "created" too, of a volume it did not create (half the races of two
// `volume create` processes). Through the command, each with its own engine, as two
// processes; the second is known to wait by the progress line it draws on a terminal's stderr.
func TestTwoCreatesOfOneSpecAtOnceOneSaysUnchanged(t *testing.T) {
	ctx := context.Background()
	faults := csitest.NewFaults()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	socket, _ := csitest.Serve(t, csitest.WithServer(mem), csitest.WithFaults(faults))
	h := &cliHarness{ctx: ctx, state: t.TempDir() + "/state"}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "a.hcl")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(createSpec, "%s", "a")), 0o600); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	faults.Inject(csi.RPCCreateVolume, csitest.Fault{Gate: gate, Times: 1})
	type result struct {
		code     int
		out, err string
	}
	create := func(errOut *signalWriter, tty bool, done chan<- result) {
		out := &bytes.Buffer{}
		ios := &iostreams.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut}
		ios.SetTTY(false, false, tty)
		f := NewFactory(ios)
		root := NewRootCmd(f)
		root.SetArgs([]string{"--state-dir", h.state, "volume", "create", file})
		code := f.Report(f.RedactError(ctx, root.Execute()))
		f.Close()
		done <- result{code, out.String(), errOut.String()}
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go create(&signalWriter{seen: make(chan struct{})}, false, first)
	for deadline := time.Now().Add(30 * time.Second); faults.Held() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatal("the first create's CreateVolume was never held at the plugin")
		}
	}
	errOut := &signalWriter{want: `waiting for the lock on volume "a"`, seen: make(chan struct{})}
	go create(errOut, true, second)
	select {
	case <-errOut.seen:
	case r := <-second:
		close(gate)
		t.Fatalf("the second create ended (exit %d) before it waited for the first:\n%s%s", r.code, r.out, r.err)
	case <-time.After(30 * time.Second):
		close(gate)
		t.Fatalf("the second create never said it waited for the volume's lock:\n%s", errOut.String())
	}
	close(gate)
	a, b := <-first, <-second
	if a.code != 0 || !strings.HasPrefix(a.out, `Volume "a" created (external ID "`) {
		t.Errorf("the create that sent CreateVolume: exit %d, stdout %q, stderr %q; want exit 0 saying created", a.code, a.out, a.err)
	}
	if b.code != 0 || !strings.HasPrefix(b.out, `Volume "a" unchanged: it exists with this spec (external ID "`) {
		t.Errorf("the create that waited for it: exit %d, stdout %q, stderr %q; want exit 0 saying unchanged, not created", b.code, b.out, b.err)
	}
	if n := mem.CallCount(csi.RPCCreateVolume); n != 1 {
		t.Errorf("CreateVolume sent %d times, want once", n)
	}
}

// A create of a volume made before whose spec asks a larger capacity_min grows it, and says
// so; the same spec once more is unchanged (the engine's outcome, CreateVolumeOutcome).
func TestVolumeCreateAgainWithALargerMinimumSaysExpanded(t *testing.T) {
	h := newCLIHarness(t)
	sized := func(min string) map[string]string {
		src := strings.ReplaceAll(createSpec, "%s", "a")
		if min != "" {
			src += "capacity_min = \"" + min + "\"\n"
		}
		return map[string]string{"a.hcl": src}
	}
	var lines []string
	for _, files := range []map[string]string{sized("1GiB"), sized("2GiB"), sized("2GiB")} {
		ios, _, out, _ := iostreams.Test()
		o := &VolumeSubmitOptions{IO: ios, Engine: h.engine, ReadFile: specFiles(files), Verb: spec.VerbCreate, Files: []string{"a.hcl"}}
		if err := volumeSubmitRun(h.ctx, o); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(out.String()))
	}
	for i, want := range []string{
		`Volume "a" created (external ID "vol-1", 1.0 GiB)`,
		`Volume "a" exists; expanded to the spec's capacity_min (external ID "vol-1", 2.0 GiB)`,
		`Volume "a" unchanged: it exists with this spec (external ID "vol-1", 2.0 GiB)`,
	} {
		if lines[i] != want {
			t.Errorf("create %d: %q, want %q", i+1, lines[i], want)
		}
	}
}
