package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// These benchmarks run volctl as a whole process, built as the release is (benchVolctl), so
// they include start-up, opening the state and printing:
//
//	go test ./cmd/volctl -run '^$' -bench . -benchtime 10x

var bench struct {
	mu   sync.Mutex
	dir  string            // removed by TestMain once the tests have run
	bins map[string]*built // what was built (builtOnce's key) -> binary
}

// built is one build of builtOnce: done once, by the first test to want it, while tests that
// want another build (with other tags) build theirs meanwhile rather than queue behind it.
type built struct {
	once sync.Once
	bin  string
	err  error // with the go command's output
}

// benchVolctl builds volctl once per test process as the release is built and returns its
// path. The test binary, which testscript puts on $PATH as volctl, would measure the testing
// package's start-up (about 15 ms more per process here) instead of volctl's.
func benchVolctl(b testing.TB) string { return benchBuild(b, ".") }

// benchBuild builds the main package pkg (relative to this directory) once per test process
// as the release is built: CGO_ENABLED=0, -trimpath, stripped, the release's build tags
// (releaseTags).
func benchBuild(b testing.TB, pkg string) string {
	b.Helper()
	args := []string{"build", "-trimpath", "-ldflags", "-s -w"}
	if releaseTags != "" {
		args = append(args, "-tags", releaseTags)
	}
	name := filepath.Base(filepath.Clean(pkg))
	if pkg == "." {
		name = "volctl"
	}
	return builtOnce(b, "release "+pkg, pkg, name, args, []string{"CGO_ENABLED=0"})
}

// builtOnce runs `go` with args, `-o` and the package pkg (with env added to the environment)
// once per test process for each key, into a directory of its own under bench.dir, and returns
// the binary's path, named name.
func builtOnce(b testing.TB, key, pkg, name string, args, env []string) string {
	b.Helper()
	bin, err := buildOnce(key, pkg, name, args, env)
	if err != nil {
		b.Fatalf("building %s: %v", pkg, err)
	}
	return bin
}

// buildOnce is builtOnce's build, which prebuild starts before any test asks for it.
func buildOnce(key, pkg, name string, args, env []string) (string, error) {
	bench.mu.Lock()
	if bench.dir == "" {
		dir, err := os.MkdirTemp("", "volctl-bench-")
		if err != nil {
			bench.mu.Unlock()
			return "", err
		}
		bench.dir, bench.bins = dir, map[string]*built{}
	}
	bb, ok := bench.bins[key]
	if !ok {
		bb = &built{bin: filepath.Join(bench.dir, fmt.Sprintf("bin%d", len(bench.bins)), name)}
		bench.bins[key] = bb
	}
	bench.mu.Unlock()
	bb.once.Do(func() {
		args = append(append(args[:len(args):len(args)], "-o", bb.bin), pkg)
		gocmd, err := exec.LookPath("go")
		if err != nil {
			gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		cmd := exec.Command(gocmd, args...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			bb.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	return bb.bin, bb.err
}

// releaseTags are the build tags the release is built with (.goreleaser.yaml's flags, README's
// build command; TestReleaseBuildTags checks both). grpcnotrace leaves out gRPC's request
// tracing (golang.org/x/net/trace, and html/template with it), which volctl never turns on and
// every process initialised: about 110,000 instructions and 30 page faults of each start-up.
const releaseTags = "grpcnotrace"

// volctlCmd runs volctl on a state dir, its stdout discarded.
func volctlCmd(b *testing.B, state string, args ...string) *exec.Cmd {
	b.Helper()
	cmd := exec.Command(benchVolctl(b), args...)
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state, "NO_COLOR=1")
	cmd.Stdout = io.Discard
	return cmd
}

func runVolctl(b *testing.B, state string, args ...string) {
	b.Helper()
	timeVolctl(b, state, args...)
}

// timeVolctl runs volctl and returns its wall time and the CPU time (user + system) the
// process used: on a shared machine the CPU time moves less than the wall time.
func timeVolctl(b *testing.B, state string, args ...string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := volctlCmd(b, state, args...)
	out := &limitedBuffer{}
	cmd.Stderr = out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("volctl %v: %v\n%s", args, err, out.b)
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(l.b) < 64<<10 {
		l.b = append(l.b, p...)
	}
	return len(p), nil
}

// seedVolumes writes n volumes of a registered plugin straight into a new state dir, with
// what real specs carry (two capabilities, mount options, secrets, parameters, topology), and
// a live claim on every tenth, so the list has claims to count.
// fingerprintBenchPlugin records, in seedVolumes' state, plugin hp's fingerprint as a connection
// to it would: a driver name and node ID, its node in topology node.
func fingerprintBenchPlugin(b *testing.B, state string, node map[string]string) {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, state)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Update(ctx, func(tx *store.Tx) error {
		return tx.Plugins().SetFingerprint("hp", store.Fingerprint{Provider: "hostpath.csi.volctl.dev", Version: "bench", NodeID: "n1", Topology: node})
	}); err != nil {
		b.Fatal(err)
	}
}

func seedVolumes(b *testing.B, n int) string {
	b.Helper()
	ctx := context.Background()
	state := filepath.Join(b.TempDir(), "state")
	st, err := store.Open(ctx, state)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	err = st.Update(ctx, func(tx *store.Tx) error {
		p := store.PluginFromSpec(spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/run/volctl/hp.sock"})
		if err := tx.Plugins().Put(&p); err != nil {
			return err
		}
		if err := tx.Plugins().SetHealth("hp", store.Health{Healthy: true, Ready: true}); err != nil {
			return err
		}
		for i := range n {
			v := store.VolumeFromSpec(spec.Volume{
				ID: fmt.Sprintf("vol-%05d", i), Name: fmt.Sprintf("volume %d", i), Namespace: "default", Type: "csi",
				PluginID: "hp", ExternalID: fmt.Sprintf("ext-%05d", i), CapacityMin: 1 << 30,
				Capabilities: []spec.Capability{
					{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
					{AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem},
				},
				MountOptions:    &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime"}},
				Secrets:         spec.Secrets{"token": "s3cr3t"},
				Parameters:      map[string]string{"tier": "gold", "replicas": "3"},
				TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}},
			})
			v.State, v.CapacityBytes = store.VolumeReady, 1<<30
			if err := tx.Volumes().Insert(&v); err != nil {
				return err
			}
			if i%10 == 0 {
				c := store.Claim{VolumeID: v.ID, Alloc: fmt.Sprintf("web-%d", i), Mode: store.ClaimWrite,
					AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem, State: store.ClaimPublished,
					TargetPath: filepath.Join(state, "publish", fmt.Sprintf("web-%d", i), v.ID, "rw-file-system-single-node-writer")}
				if err := tx.Claims().Insert(&c); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return state
}

// BenchmarkVolumeStatusList10k: `volctl volume status` (the table, and --json) over 10,000
// volumes, as a process.
func BenchmarkVolumeStatusList10k(b *testing.B) {
	state := seedVolumes(b, 10_000)
	for _, args := range [][]string{{"volume", "status"}, {"volume", "status", "--json"}} {
		b.Run(args[len(args)-1], func(b *testing.B) {
			for b.Loop() {
				runVolctl(b, state, args...)
			}
		})
	}
}

const benchVolumeSpec = `id          = "vol-%05d"
name        = "volume %d"
type        = "csi"
plugin_id   = "mem"
external_id = "ext-%05d"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime"]
}
secrets {
  token = "s3cr3t"
}
`

// BenchmarkVolumeRegister1000: registering 1,000 volumes against a plugin with a controller
// (so each is confirmed with ValidateVolumeCapabilities over a real socket), in one process
// given 1,000 files, and as 1,000 processes of one file each. Each iteration starts from a
// fresh state dir with only the plugin registered.
func BenchmarkVolumeRegister1000(b *testing.B) {
	const n = 1000
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	for i := range n {
		mem.AddVolume(csi.Volume{ID: fmt.Sprintf("ext-%05d", i), CapacityBytes: 1 << 30})
	}
	socket, _ := csitest.Serve(b, csitest.WithServer(mem))
	dir := b.TempDir()
	files := make([]string, n)
	for i := range files {
		files[i] = filepath.Join(dir, fmt.Sprintf("vol-%05d.hcl", i))
		if err := os.WriteFile(files[i], fmt.Appendf(nil, benchVolumeSpec, i, i, i), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	fresh := func(b *testing.B) string {
		b.Helper()
		state := filepath.Join(b.TempDir(), "state")
		runVolctl(b, state, "plugin", "register", "--id", "mem", "--socket", socket)
		return state
	}
	b.Run("one-process", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			state := fresh(b)
			b.StartTimer()
			runVolctl(b, state, append([]string{"volume", "register"}, files...)...)
		}
	})
	b.Run("1000-processes", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			state := fresh(b)
			b.StartTimer()
			for _, f := range files {
				runVolctl(b, state, "volume", "register", f)
			}
		}
	})
}
