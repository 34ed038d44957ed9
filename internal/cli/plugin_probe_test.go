package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

func TestPluginProbeFlags(t *testing.T) {
	tests := []flagCase[PluginProbeOptions]{
		{name: "monolith", args: []string{"--socket", "/s.sock"}, want: PluginProbeOptions{Socket: "/s.sock", Timeout: 5 * time.Second}},
		{name: "split with timeout and json", args: []string{"--controller-socket", "/c", "--node-socket", "/n", "--timeout", "2s", "--json"},
			want: PluginProbeOptions{ControllerSocket: "/c", NodeSocket: "/n", Timeout: 2 * time.Second, Exporter: exportFlags{JSON: true}}},
		{name: "template", args: []string{"--socket", "/s", "-t", "{{.provider}}"},
			want: PluginProbeOptions{Socket: "/s", Timeout: 5 * time.Second, Exporter: exportFlags{Template: "{{.provider}}"}}},
		{name: "extra argument", args: []string{"--socket", "/s", "x"}, wantErr: "accepts 0 arg"},
	}
	checkFlagCases(t, newCmdPluginProbe, tests, func(t *testing.T, got PluginProbeOptions) (PluginProbeOptions, error) {
		if got.Exporter.ios != got.IO || got.IO == nil {
			t.Errorf("-t and --jq print to streams other than the command's (a terminal's escapes would follow another stream)")
		}
		got.IO, got.Logger, got.State = nil, nil, nil // the factory's, not flags
		if (got.Exporter.tmpl != nil) != (got.Exporter.Template != "") {
			t.Errorf("-t %q parsed when set: %v", got.Exporter.Template, got.Exporter.tmpl != nil)
		}
		if got.Exporter.result != reflect.TypeFor[pluginProbeResult]() || !got.Exporter.reads {
			t.Errorf("-t is not held to what plugin probe prints, pluginProbeResult: %v", got.Exporter.result)
		}
		got.Exporter.tmpl, got.Exporter.ios, got.Exporter.result, got.Exporter.reads = nil, nil, nil, false // checked above; not flags
		return got, nil
	})
}

func TestPluginProbeUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		opts PluginProbeOptions
		want string
	}{
		{"no socket", PluginProbeOptions{Timeout: time.Second}, "--socket is required"},
		{"monolith and split", PluginProbeOptions{Socket: "/s", NodeSocket: "/n", Timeout: time.Second}, "--socket is for a monolith"},
		{"zero timeout", PluginProbeOptions{Socket: "/s"}, "--timeout must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			tt.opts.IO = ios
			expectErr(t, pluginProbeRun(context.Background(), &tt.opts), tt.want, ExitUsage)
		})
	}
}

// probePlugin serves a MemPlugin for probe tests.
func probePlugin(t *testing.T, cfg csitest.MemConfig) (string, *csitest.Faults) {
	t.Helper()
	f := csitest.NewFaults()
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)), csitest.WithFaults(f))
	return socket, f
}

func TestPluginProbeTable(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "a", "rack": "r1"}}
	cfg.MaxVolumes = 8
	socket, _ := probePlugin(t, cfg)
	ios, _, out, _ := iostreams.Test()
	if err := pluginProbeRun(context.Background(), &PluginProbeOptions{IO: ios, Socket: socket, Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Provider          = mem.csi.volctl.test\n",
		"Version           = 1.0.0\n",
		"Controller Socket = " + socket + "\n",
		"Node ID           = mem-node-1\n",
		"Max Volumes       = 8\n",
		"Topology          = rack=r1, zone=a\n",
		"Health            = healthy\n",
		"Probe Latency     = ",
		"SERVICE     CAPABILITY\n",
		"plugin      CONTROLLER_SERVICE\n",
		"controller  CREATE_DELETE_VOLUME\n",
		"node        STAGE_UNSTAGE_VOLUME\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out.String(), "Error") {
		t.Errorf("a healthy plugin shows an error:\n%s", out)
	}
}

func TestPluginProbeJSON(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Ready = new(bool) // initialising: healthy, not ready, exit 0
	socket, _ := probePlugin(t, cfg)
	ios, _, out, _ := iostreams.Test()
	err := pluginProbeRun(context.Background(), &PluginProbeOptions{IO: ios, Socket: "unix://" + socket, Timeout: 5 * time.Second,
		Exporter: exportFlags{JSON: true}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	// The documented keys, all present, even when empty.
	keys := []string{"provider", "version", "controller_socket", "node_socket", "node_id", "max_volumes", "accessible_topology",
		"healthy", "ready", "error", "probe_latency_ms", "capabilities", "manifest"}
	for _, k := range keys {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON lacks %q:\n%s", k, out)
		}
	}
	if len(got) != len(keys) {
		t.Errorf("JSON has %d keys, the contract %d:\n%s", len(got), len(keys), out)
	}
	if got["healthy"] != true || got["ready"] != false || got["error"] != nil || got["node_socket"] != socket || got["max_volumes"] != 0.0 {
		t.Errorf("JSON values wrong:\n%s", out)
	}
	caps := got["capabilities"].(map[string]any)
	if node := caps["node"].([]any); len(node) != 3 || node[0] != "STAGE_UNSTAGE_VOLUME" {
		t.Errorf("node capabilities = %v", node)
	}
}

func TestPluginProbeUnhealthy(t *testing.T) {
	socket, faults := probePlugin(t, csitest.DefaultMemConfig())
	faults.Inject(csi.RPCProbe, csitest.Fault{Code: codes.FailedPrecondition, Message: "backend unreachable"})
	ios, _, out, _ := iostreams.Test()
	err := pluginProbeRun(context.Background(), &PluginProbeOptions{IO: ios, Socket: socket, Timeout: 5 * time.Second})
	if err == nil || ExitCode(err) != ExitError {
		t.Fatalf("err = %v, want exit 1", err)
	}
	if !strings.Contains(err.Error(), `plugin "mem.csi.volctl.test" is unhealthy: Probe: FailedPrecondition: backend unreachable`) {
		t.Errorf("err = %v", err)
	}
	checkHolds(t, "output", out.String(), []string{"Health            = unhealthy\n", "Error             = Probe: FailedPrecondition: backend unreachable"}, nil)

	// An UNAVAILABLE the plugin answers itself is a plugin that is there: its fingerprint is
	// shown, as for any other failing Probe (before, it read as nobody there: nothing shown,
	// and a hint asking whether it was running and listening).
	faults.Clear(csi.RPCProbe)
	faults.Inject(csi.RPCProbe, csitest.Fault{Code: codes.Unavailable, Message: "ceph monitors unreachable"})
	ios, _, out, _ = iostreams.Test()
	err = pluginProbeRun(context.Background(), &PluginProbeOptions{IO: ios, Socket: socket, Timeout: 5 * time.Second})
	if err == nil || ExitCode(err) != ExitError || !strings.Contains(err.Error(), "is unhealthy: Probe: Unavailable: ceph monitors unreachable") ||
		strings.Contains(err.Error(), "listening") {
		t.Errorf("probe of a plugin answering UNAVAILABLE itself: err = %v (exit %d); want exit 1, unhealthy, no question whether it listens", err, ExitCode(err))
	}
	checkHolds(t, "output", out.String(), []string{"Provider          = mem.csi.volctl.test\n", "Health            = unhealthy\n"}, nil)
}

func TestPluginProbeMissingSocket(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.sock")
	notSocket := filepath.Join(dir, "file")
	if err := os.WriteFile(notSocket, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ socket, want string }{
		{missing, "plugin socket " + missing + " does not exist (is the plugin running?)"},
		{notSocket, "plugin socket " + notSocket + " is a regular file, not a socket"},
	}
	for _, tt := range tests {
		ios, _, out, _ := iostreams.Test()
		err := pluginProbeRun(context.Background(), &PluginProbeOptions{IO: ios, Socket: tt.socket, Timeout: 5 * time.Second})
		if err == nil || !strings.Contains(err.Error(), tt.want) || ExitCode(err) != ExitError {
			t.Errorf("err = %v (exit %d), want %q exit 1", err, ExitCode(err), tt.want)
		}
		if out.Len() != 0 {
			t.Errorf("printed for an unreachable plugin:\n%s", out)
		}
	}
}

func TestPluginProbeControllerOnly(t *testing.T) {
	socket, _ := probePlugin(t, csitest.DefaultMemConfig())
	ios, _, out, _ := iostreams.Test()
	if err := pluginProbeRun(context.Background(), &PluginProbeOptions{IO: ios, ControllerSocket: socket, Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	checkHolds(t, "output", out.String(), []string{"Node Socket       = <none>\n", "Node ID           = <none>\n", "Max Volumes       = <none>\n", "node        <none>\n"}, nil)
}

// TestPluginProbeVerboseTrace: --verbose gives the RPC trace on the logger.
func TestPluginProbeVerboseTrace(t *testing.T) {
	socket, _ := probePlugin(t, csitest.DefaultMemConfig())
	ios, _, _, _ := iostreams.Test()
	var trace bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := pluginProbeRun(context.Background(), &PluginProbeOptions{IO: ios, Logger: logger, Socket: socket, Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, rpc := range []string{"Probe", "GetPluginInfo", "GetPluginCapabilities", "ControllerGetCapabilities", "NodeGetCapabilities", "NodeGetInfo"} {
		if !strings.Contains(trace.String(), "rpc="+rpc+" ") {
			t.Errorf("trace lacks %s:\n%s", rpc, trace.String())
		}
	}
}

// plugin probe words health as plugin status and the dashboard do (engine.PluginHealth), not as
// two booleans: an initialising plugin is "not ready".
func TestPluginProbeWordsHealthAsTheEngine(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Ready = new(bool) // initialising: answers, not ready
	socket, _ := probePlugin(t, cfg)
	ios, _, out, _ := iostreams.Test()
	if err := pluginProbeRun(context.Background(), &PluginProbeOptions{IO: ios, Socket: "unix://" + socket, Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	checkHolds(t, "output", out.String(), []string{"Health            = not ready\n"}, []string{"Healthy", "Ready "})
}

// TestPluginProbeSocketTooLongSaysSo: docs/troubleshooting.md's "Socket path too long" says a
// unix socket path has at most 107 bytes. plugin register and plugin serve say so of a longer
// one (exit 2); plugin probe answered that the socket "does not exist (is the plugin
// running?)" (exit 1), a remedy that cannot work: no plugin can be reached at such a path.
func TestPluginProbeSocketTooLongSaysSo(t *testing.T) {
	long := "/tmp/" + strings.Repeat("a", 110) + "/hp.sock"
	for _, opts := range []PluginProbeOptions{
		{Socket: long},
		{ControllerSocket: "/run/c.sock", NodeSocket: "unix://" + long},
	} {
		ios, _, _, _ := iostreams.Test()
		opts.IO, opts.Timeout = ios, time.Second
		expectErr(t, pluginProbeRun(context.Background(), &opts), "is 123 bytes long; a unix socket path must fit in sun_path, at most 107 bytes", ExitUsage)
	}
}

// A plugin whose GetPluginInfo answers a manifest of megabytes (CSI: 4 KiB for a map): before,
// `plugin probe --json` printed it whole, 3 MiB of it. Now the probe fails, naming the plugin
// and its manifest, and prints nothing.
func TestPluginProbeRefusesAManifestPastItsBound(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Manifest = map[string]string{"blob": strings.Repeat("b", 3<<20)}
	socket, _ := probePlugin(t, cfg)
	ios, _, out, _ := iostreams.Test()
	err := pluginProbeRun(context.Background(), &PluginProbeOptions{IO: ios, Socket: socket, Timeout: 5 * time.Second,
		Exporter: exportFlags{JSON: true}})
	if err == nil || !strings.Contains(err.Error(), `plugin "mem.csi.volctl.test" reported a manifest with 3145732 bytes`) {
		t.Errorf("probe = %.300v; want the manifest refused, naming the plugin", err)
	}
	if out.Len() > 0 {
		t.Errorf("probe printed %d bytes", out.Len())
	}
}
