package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/cli"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/tui"
)

// TestSecretsNeverLeak registers volumes whose secrets and mount flags hold sentinel values,
// and a plugin whose exec env does, then runs every volctl command (enumerated from the cobra
// tree, so a new command fails this test until it has a case) in text, --json and --verbose
// forms, and on error paths where a plugin fails the RPC with a message that echoes the whole
// request, secrets and all. The in-memory plugin also echoes, in every error of every RPC,
// every secret and mount flag it has ever been sent, as they are and re-encoded (base64, hex;
// csitest.Faults.EchoEncoded): the errors of RPCs that carry none (NodeUnpublishVolume,
// NodeUnstageVolume) hold them too, and are stored as the claim's last error and in events. It echoes them in the data it returns too (echoInData: a
// volume's context, publish_context, its version and manifest), and the Nomad API echoes them
// in its copy of sv3. Nothing any command prints may hold a sentinel; nor may
// the dashboard's views, the agent's log, the logs of the plugins it supervises, or the -v log
// of the hostpath plugin.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	e := newLeakEnv(t)
	cases := leakCases(e)
	checkCoverage(t, cases)
	for _, c := range cases {
		e.runCase(c)
	}
	t.Run("dashboard", func(t *testing.T) { e.scanDashboard(t) })
	e.finish()
	t.Logf("scanned %d volctl invocations, %d dashboard frames and %d logs", e.invocations, e.frames, e.logs)
}

// variant is one way of running a case: flags before the command's own arguments.
type variant []string

var (
	plain   = variant{}
	verbose = variant{"-v"}
	asJSON  = variant{"-v", "--json"}
	// A template over the whole JSON form prints every field, in Go's own map syntax.
	asTemplate = variant{"-t", `{{printf "%v" .}}`}
)

// leakCase is one command to run in every variant that applies.
type leakCase struct {
	cmd    string                // the command's path under volctl, as cobra names it ("volume claim")
	args   []string              // its arguments; "{n}" becomes the variant's index, "{snap}" the last snapshot made
	json   bool                  // it takes --json and -t: run it that way too
	code   int                   // the exit status every variant must have
	want   string                // the output must hold this, to show the case took the path it means to
	fail   map[string]codes.Code // RPCs of the mem plugin that fail echoing the request
	before func(e *leakEnv, n int)
	stdin  string
	// only, when set, replaces the variants (a case that waits for retries runs once).
	only []variant
	// run, when set, runs the case instead (the agent, which runs until it is stopped).
	run    func(e *leakEnv, v variant)
	hidden bool // a command cobra adds when it executes, not in the tree
}

// leakEnv is a state dir with the sentinel volumes, the plugins they live on, and a count of
// what was scanned.
type leakEnv struct {
	t           *testing.T
	dir, state  string
	sentinels   []string // the secret, the mount flag's value, the exec env value, then their encodings
	secret      string
	flag        string
	env         string
	leaky       *leakyFaults
	echo        *csitest.Faults // echoes every value the mem plugin was ever sent in every error
	mounts      bool
	snap        string
	invocations int
	frames      int
	logs        int
	hp          func() (string, error) // stops the hostpath plugin process
	nomadAddr   string                 // a Nomad API that echoes every registration back in its error
}

func newLeakEnv(t *testing.T) *leakEnv {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	x := hex.EncodeToString(b[:])
	dir := hostpathtest.ShortDir(t) // sockets go under it
	e := &leakEnv{
		t: t, dir: dir, state: filepath.Join(dir, "state"),
		secret: "sekret-" + x, flag: "flagval-" + x, env: "envval-" + x,
		leaky: &leakyFaults{}, echo: csitest.NewFaults(), mounts: hostpathtest.CanMount() == nil,
	}
	e.sentinels = []string{e.secret, e.flag, e.env}
	e.nomadAddr = leakyNomad(t, e.sentinels)
	t.Cleanup(func() {
		if err := hostpath.UnmountAll(dir); err != nil {
			t.Error(err)
		}
	})

	// The in-memory plugin, which takes any mount flag, behind the leaky interceptor and the
	// echo.
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "mem-node"
	mem := csitest.NewMountingMemPlugin(t, cfg)
	for _, id := range []string{"ext-sr", "ext-sr2"} {
		mem.AddVolume(csi.Volume{ID: id, CapacityBytes: 1 << 20})
	}
	// It echoes each value re-encoded too (base64 alone and in basic auth, hex), which no
	// output may show either.
	reencode := []func(string) string{
		func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte("user:" + s)) },
		func(s string) string { return hex.EncodeToString([]byte(s)) },
	}
	e.echo.EchoEncoded(reencode...)
	for _, s := range []string{e.secret, e.flag, e.env} {
		for _, enc := range reencode {
			e.sentinels = append(e.sentinels, enc(s))
		}
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(echoInData(e.echo), e.echo.Interceptor(), e.leaky.interceptor))
	mem.Register(srv)
	lis, err := net.Listen("unix", filepath.Join(dir, "mem.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	// The hostpath plugin as its own process, logging every RPC.
	hp := exec.Command("volctl", "-v", "plugin", "serve", "hostpath", "--socket", filepath.Join(dir, "hp.sock"),
		"--root", filepath.Join(dir, "hproot"), "--node-id", "n1")
	hp.Env = append(os.Environ(), "NO_COLOR=1")
	e.hp = startBackground(t, hp)
	waitForPath(t, filepath.Join(dir, "hp.sock"))

	e.writeSpecs()
	e.must("plugin", "register", "--id", "mem", "--socket", filepath.Join(dir, "mem.sock"))
	e.must("plugin", "register", "--id", "hp", "--socket", filepath.Join(dir, "hp.sock"))
	return e
}

// leakCases is the sweep: every command, in an order that builds the state the next ones need.
func leakCases(e *leakEnv) []leakCase {
	mountCode := 0
	if !e.mounts {
		mountCode = 1 // the hostpath plugin cannot bind-mount: FailedPrecondition
	}
	echo := "leaky plugin echoes"
	// What the mem plugin appends to every error: the values it was sent in other RPCs.
	echoed := "(echo: "
	internal := func(rpc string) map[string]codes.Code { return map[string]codes.Code{rpc: codes.Internal} }
	claim := func(vol, alloc string) func(*leakEnv, int) {
		return func(e *leakEnv, n int) { e.must("volume", "claim", vol, "--alloc", expand(alloc, n, "")) }
	}
	snapshot := func(e *leakEnv, n int) {
		e.snap = strings.TrimSpace(e.must("volume", "snapshot", "create", "sv", fmt.Sprintf("tmp-%d", n), "-t", "{{.id}}"))
	}
	return []leakCase{
		{cmd: "", code: 0, want: "Usage:"},
		{cmd: "help", args: []string{"volume", "claim"}, want: "--mount-flag"},
		{cmd: "version", want: "volctl"},
		{cmd: "completion", want: "Usage:"},
		{cmd: "completion bash", want: "bash"},
		{cmd: "completion zsh", want: "zsh"},
		{cmd: "completion fish", want: "fish"},
		{cmd: "completion powershell", want: "Register-ArgumentCompleter"},
		{cmd: "__complete", args: []string{"volume", "status", ""}, want: "ShellCompDirective", hidden: true},
		{cmd: "init", args: []string{"volume", "-"}, want: "capability"},
		{cmd: "init", args: []string{"plugin", "-"}, want: "plugin"},
		{cmd: "init", args: []string{"group", "-"}, want: "group"},

		{cmd: "validate", args: []string{"sv.hcl", "hpx.hcl", "g.hcl", "sv.json"}, json: true},
		{cmd: "validate", args: []string{"bad-syntax.hcl"}, json: true, code: 2, want: "bad-syntax.hcl"},
		{cmd: "validate", args: []string{"bad-types.hcl", "bad-hcl1.hcl", "bad.json"}, json: true, code: 2, want: "bad-types.hcl"},
		{cmd: "validate", args: []string{"-"}, stdin: "bad-types.hcl", json: true, code: 2, want: "stdin"},
		{cmd: "validate", args: []string{"hpx-bad.hcl", "g-bad.hcl"}, json: true, code: 2, want: "hpx-bad.hcl"},

		{cmd: "plugin", want: "Usage:"},
		{cmd: "plugin probe", args: []string{"--socket", "mem.sock"}, json: true, want: "mem.csi.volctl.test"},
		{cmd: "plugin probe", args: []string{"--socket", "nothing.sock"}, json: true, code: 1, want: "does not exist"},
		{cmd: "plugin register", args: []string{"hpx.hcl"}, json: true, want: "hpx"},
		{cmd: "plugin register", args: []string{"hpx-bad.hcl"}, json: true, code: 2, want: "hpx-bad.hcl"},
		{cmd: "plugin status", json: true, want: "hpx"},
		{cmd: "plugin status", args: []string{"hpx"}, json: true, code: 1, want: "is the plugin running?"},
		{cmd: "plugin serve", want: "hostpath"},
		// The served hostpath plugin (-v) is the long-running process started with the sweep;
		// its log is scanned at the end.
		{cmd: "plugin serve hostpath", args: []string{"--root", "hproot", "--node-id", "n1"}, code: 2, want: "--socket is required"},

		{cmd: "volume", want: "Usage:"},
		{cmd: "volume create", args: []string{"sv.hcl", "sv2.hcl", "sv3.hcl", "sv4.hcl", "sv5.hcl", "su.hcl", "hv.hcl"}, json: true},
		{cmd: "create", args: []string{"sv.hcl"}, json: true},
		{cmd: "volume create", args: []string{"svf.hcl"}, json: true, code: 1, fail: internal("CreateVolume"), want: echo},
		{cmd: "volume create", args: []string{"hv-bad.hcl"}, json: true, code: 1, want: "not one a bind mount supports"},
		{cmd: "volume register", args: []string{"sr.hcl"}, json: true},
		{cmd: "register", args: []string{"sr.hcl"}, json: true},
		{cmd: "volume register", args: []string{"sr2.hcl"}, json: true, code: 1, fail: internal("ValidateVolumeCapabilities"), want: echo},

		// Claims: with the sentinel flag from the volume and from the command line, a final
		// failure (rolled back), a retryable one (left for reconcile, its error kept), and the
		// hostpath plugin taking the secret and refusing the flag.
		{cmd: "volume claim", args: []string{"sv", "--alloc", "a1"}, json: true},
		{cmd: "volume claim", args: []string{"sv5", "--alloc", "a2", "--mount-flag", e.flag, "--fs-type", "xfs"}, json: true},
		{cmd: "volume claim", args: []string{"sv4", "--alloc", "t1"}},
		{cmd: "volume claim", args: []string{"sv", "--alloc", "e1-{n}"}, json: true, code: 1, fail: internal("NodePublishVolume"), want: echo},
		{cmd: "volume claim", args: []string{"sv", "--alloc", "e2"}, code: 1, only: []variant{verbose},
			fail: map[string]codes.Code{"NodePublishVolume": codes.Unavailable}, want: "reconcile"},
		{cmd: "volume claim", args: []string{"hv", "--alloc", "h1"}, json: true, code: mountCode},
		{cmd: "volume claim", args: []string{"hv", "--alloc", "h2-{n}", "--mount-flag", e.flag}, json: true, code: 1, want: "not one a bind mount supports"},

		// Probed again now that the mem plugin has been sent secrets, which it echoes in its
		// identity (echoInData) and in its errors.
		{cmd: "plugin probe", args: []string{"--socket", "mem.sock"}, json: true, want: "[REDACTED]"},
		{cmd: "plugin probe", args: []string{"--socket", "mem.sock"}, json: true, code: 1, fail: internal("Probe"), want: "unhealthy"},

		{cmd: "volume status", json: true, want: "sv"},
		{cmd: "volume status", args: []string{"sv"}, json: true, want: echo},
		{cmd: "volume status", args: []string{"sv"}, only: []variant{asTemplate}, want: "[REDACTED]"},
		{cmd: "volume status", args: []string{"nope"}, json: true, code: 1, want: "nope"},
		{cmd: "status", json: true, want: echo},
		{cmd: "status", args: []string{"sv"}, json: true, want: echo},
		{cmd: "status", only: []variant{asTemplate}, want: "[REDACTED]"},

		{cmd: "volume expand", args: []string{"sv", "--size", "2MiB"}, json: true},
		{cmd: "volume expand", args: []string{"sv", "--size", "{n}9MiB"}, json: true, code: 1, fail: internal("ControllerExpandVolume"), want: echo},
		{cmd: "volume expand", args: []string{"sv", "--size", "{n}8MiB"}, json: true, code: 1, fail: internal("NodeExpandVolume"), want: echo},
		{cmd: "volume snapshot", want: "Usage:"},
		{cmd: "volume snapshot create", args: []string{"sv", "snap1"}, json: true},
		{cmd: "volume snapshot create", args: []string{"sv", "bad-{n}"}, json: true, code: 1, fail: internal("CreateSnapshot"), want: echo},
		{cmd: "volume snapshot list", json: true, want: "snap1"},
		{cmd: "volume snapshot list", args: []string{"--plugin", "mem"}, json: true, fail: internal("ListSnapshots"), want: echo},
		{cmd: "volume snapshot delete", args: []string{"mem", "{snap}", "--yes"}, before: snapshot},
		{cmd: "volume snapshot delete", args: []string{"mem", "{snap}", "--yes"}, before: snapshot, code: 1, fail: internal("DeleteSnapshot"), want: echo},
		{cmd: "volume snapshot deregister", args: []string{"mem", "{snap}", "--yes"}, before: snapshot, want: "deregistered"},

		{cmd: "group", want: "Usage:"},
		{cmd: "group run", args: []string{"g.hcl"}, json: true, want: "g[1]"},
		{cmd: "group run", args: []string{"g-bad.hcl"}, json: true, code: 2, want: "g-bad.hcl"},
		{cmd: "group run", args: []string{"g2.hcl"}, json: true, code: 1, fail: internal("NodePublishVolume"), want: echo},
		{cmd: "group status", json: true, want: "g2"},
		{cmd: "group status", args: []string{"g"}, json: true, want: "g[0]"},
		{cmd: "group stop", args: []string{"g"}, json: true, before: func(e *leakEnv, _ int) { e.must("group", "run", "g.hcl") }},

		{cmd: "volume release", args: []string{"sv", "--alloc", "r{n}"}, json: true, before: claim("sv", "r{n}")},
		{cmd: "volume release", args: []string{"sv2", "--alloc", "rf{n}"}, json: true, code: 1, before: claim("sv2", "rf{n}"),
			fail: internal("ControllerUnpublishVolume"), want: echo},
		{cmd: "volume release", args: []string{"sv", "--alloc", "nobody"}, json: true, want: "no claim"},
		{cmd: "volume detach", args: []string{"sv3", "--yes"}, json: true, before: claim("sv3", "d{n}")},
		{cmd: "volume detach", args: []string{"sv3", "--yes"}, json: true, code: 1, before: claim("sv3", "df{n}"),
			fail: internal("ControllerUnpublishVolume"), want: echo},
		// RPCs that carry no secret, failing with the echo of what other RPCs carried: the
		// release is left for reconcile with the error stored on the claim, which status shows.
		{cmd: "volume release", args: []string{"su", "--alloc", "u{n}"}, json: true, code: 1, before: claim("su", "u{n}"),
			fail: internal("NodeUnstageVolume"), want: echoed},
		{cmd: "volume release", args: []string{"sv", "--alloc", "w{n}"}, json: true, code: 1, before: claim("sv", "w{n}"),
			fail: internal("NodeUnpublishVolume"), want: echoed},
		{cmd: "volume status", args: []string{"su"}, json: true, want: echoed},
		{cmd: "status", args: []string{"sv"}, json: true, want: echoed},
		{cmd: "reconcile", code: 1, only: []variant{plain, verbose}, fail: internal("NodeUnstageVolume"), want: echoed},

		// Reconcile re-drives what the failures above left: first with the plugin still failing.
		{cmd: "reconcile", code: 1, only: []variant{plain, verbose}, fail: internal("ControllerUnpublishVolume"), want: echo},
		{cmd: "reconcile", json: true},
		// Left failing for the dashboard to show: a claim whose release the echo failed.
		{cmd: "volume release", args: []string{"su", "--alloc", "z"}, only: []variant{verbose}, code: 1, before: claim("su", "z"),
			fail: internal("NodeUnpublishVolume"), want: echoed},
		{cmd: "volume status", args: []string{"su"}, only: []variant{verbose, asTemplate}, want: echoed},
		// The event log holds every failure above, with the plugin's echoing messages.
		{cmd: "events", json: true, want: echoed},

		{cmd: "volume deregister", args: []string{"sr", "--yes"}, before: func(e *leakEnv, _ int) { e.must("volume", "register", "sr.hcl") }},
		{cmd: "volume deregister", args: []string{"sv", "--yes"}, code: 4, want: "claim"},
		{cmd: "volume delete", args: []string{"sdel", "--yes"}, before: func(e *leakEnv, _ int) { e.must("volume", "create", "sdel.hcl") }},
		{cmd: "volume delete", args: []string{"sdf{n}", "--yes"}, code: 1, fail: internal("DeleteVolume"), want: echo,
			before: func(e *leakEnv, n int) { e.must("volume", "create", fmt.Sprintf("sdf%d.hcl", n)) }},
		{cmd: "plugin deregister", args: []string{"hpx", "--yes"}, before: func(e *leakEnv, _ int) { e.must("plugin", "register", "hpx.hcl") }},
		{cmd: "plugin deregister", args: []string{"mem", "--yes"}, code: 4, want: "volume"},

		// Export writes secrets into files only with --include-secrets, never on stdout or
		// stderr; the Nomad commands talk to a Nomad that echoes the registration request
		// (secrets and mount flags) in its error.
		{cmd: "export", want: "Usage:"},
		{cmd: "export nomad", args: []string{"--all", "--out", "exp{n}", "--plugin-root", "/srv/hp"}, want: "Wrote volume"},
		{cmd: "export nomad", args: []string{"--all", "--out", "expsec{n}", "--plugin-root", "/srv/hp", "--include-secrets"}, want: "Wrote volume"},
		{cmd: "nomad", want: "Usage:"},
		// sv's claims hold its attachment: refused even forced, before Nomad is asked. sr has
		// no claim, and reaches the registration Nomad refuses echoing it.
		{cmd: "nomad register", args: []string{"sv", "--force"}, code: 4, want: "--force does not"},
		{cmd: "nomad register", args: []string{"sr"}, code: 1, want: "refused the registration",
			before: func(e *leakEnv, _ int) { e.must("volume", "register", "sr.hcl") }},
		// Its claims would stop the registration, as above: the plan exits 4, in JSON too.
		{cmd: "nomad register", args: []string{"sv", "--dry-run"}, code: 4, json: true, want: "sv"},
		{cmd: "nomad status", args: []string{"sv"}, json: true, want: "sv"},
		{cmd: "nomad status", args: []string{"sv3"}, json: true, want: "sv3"},
		{cmd: "nomad release", args: []string{"sv"}, want: "not handed over"},

		{cmd: "tui", code: 1, want: "needs a terminal"},
		{cmd: "quickstart", code: mountCode, want: "quickstart"},
		{cmd: "agent", args: []string{"--config", "agent-bad.hcl"}, code: 2, want: "agent-bad.hcl"},
		{cmd: "agent", run: (*leakEnv).runAgent, only: []variant{verbose, asJSON}}, // asJSON: --log-format json
	}
}

// echoInData makes the mem plugin echo, in the data it returns rather than in errors, every
// secret and mount flag it was ever sent: in a created volume's context, in the
// publish_context of ControllerPublishVolume, and in its vendor_version and manifest. volctl
// keeps that data raw (it goes back to the plugin) and prints it: scrubbed.
func echoInData(f *csitest.Faults) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err != nil {
			return resp, err
		}
		seen := strings.Join(f.Seen(), " ")
		if seen == "" {
			return resp, err
		}
		switch r := resp.(type) {
		case *csipb.CreateVolumeResponse:
			if r.Volume.VolumeContext == nil {
				r.Volume.VolumeContext = map[string]string{}
			}
			r.Volume.VolumeContext["echo"] = seen
		case *csipb.ControllerPublishVolumeResponse:
			if r.PublishContext == nil {
				r.PublishContext = map[string]string{}
			}
			r.PublishContext["echo"] = seen
		case *csipb.GetPluginInfoResponse:
			r.VendorVersion += " " + seen
			r.Manifest = map[string]string{"echo": seen}
		}
		return resp, err
	}
}

// expand fills in a case's placeholders.
func expand(arg string, n int, snap string) string {
	return strings.NewReplacer("{n}", fmt.Sprint(n), "{snap}", snap).Replace(arg)
}

// checkCoverage fails for every command of the cobra tree without a case, and for a case that
// names no command.
func checkCoverage(t *testing.T, cases []leakCase) {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	root := cli.NewRootCmd(cli.NewFactory(ios))
	// cobra adds these when it executes; add them now to see them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	tree := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		tree[strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")] = true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.cmd] = true
		if !tree[c.cmd] && !c.hidden {
			t.Errorf("the sweep has a case for %q, which is not a volctl command", c.cmd)
		}
	}
	for cmd := range tree {
		if !covered[cmd] {
			t.Errorf("volctl %s has no case in the secret-leak sweep: add one to leakCases", cmd)
		}
	}
	if len(tree) < 30 {
		t.Errorf("only %d commands found in the tree: the walk is broken", len(tree))
	}
}

func (e *leakEnv) runCase(c leakCase) {
	variants := c.only
	if variants == nil {
		// -v adds RPC traces and debug logs on stderr and changes nothing on stdout, so one
		// run scans the text output, the error and the traces together.
		variants = []variant{verbose}
		if c.json {
			variants = append(variants, asJSON)
		}
	}
	for n, v := range variants {
		if c.run != nil {
			c.run(e, v)
			continue
		}
		if c.before != nil {
			c.before(e, n)
		}
		args := slices.Clone(v)
		if c.cmd != "" {
			args = append(strings.Fields(c.cmd), args...)
		}
		for _, a := range c.args {
			args = append(args, expand(a, n, e.snap))
		}
		e.leaky.arm(c.fail)
		res := e.volctl(c.stdin, args...)
		e.leaky.arm(nil)
		out := res.stdout + res.stderr
		if res.code != c.code {
			e.t.Errorf("volctl %s: exit %d, want %d\n%s", strings.Join(args, " "), res.code, c.code, out)
		} else if !strings.Contains(out, c.want) {
			e.t.Errorf("volctl %s: the output lacks %q, so the case did not take its path\n%s", strings.Join(args, " "), c.want, out)
		}
	}
}

// volctl runs volctl in the env's dir with stdin from a file there (if named), and scans both
// its streams for the sentinels.
func (e *leakEnv) volctl(stdin string, args ...string) procResult {
	e.t.Helper()
	cmd := exec.Command(shortVolctl(e.t), args...)
	cmd.Dir = e.dir
	// TMPDIR: quickstart makes its directory, socket included, under the short test dir.
	// Short retry waits (testRetry): what is scanned is the same however long the waits between
	// a retried RPC's tries.
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+e.state, "NO_COLOR=1", "TMPDIR="+e.dir, "NOMAD_ADDR="+e.nomadAddr, commandRetryEnv+"=10ms")
	if stdin != "" {
		f, err := os.Open(filepath.Join(e.dir, stdin))
		if err != nil {
			e.t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := procResult{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("volctl %s: %v", strings.Join(args, " "), err)
	}
	e.invocations++
	what := "volctl " + strings.Join(args, " ")
	e.scan(what+" (stdout)", res.stdout)
	e.scan(what+" (stderr)", res.stderr)
	return res
}

// must runs a volctl command that has to succeed (still scanned) and returns its stdout.
func (e *leakEnv) must(args ...string) string {
	e.t.Helper()
	res := e.volctl("", args...)
	if res.code != 0 {
		e.t.Fatalf("volctl %s: exit %d\n%s%s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
	}
	return res.stdout
}

// scan fails the test for every sentinel in text.
func (e *leakEnv) scan(what, text string) {
	e.t.Helper()
	for _, s := range e.sentinels {
		if i := strings.Index(text, s); i >= 0 {
			from, to := max(i-300, 0), min(i+len(s)+100, len(text))
			e.t.Errorf("%s leaks sentinel %q:\n...%s...", what, s, text[from:to])
		}
	}
}

// runAgent runs `volctl agent` until the exec plugin of its config (whose env holds a
// sentinel) is healthy, then stops it, and scans its log and the plugin's.
func (e *leakEnv) runAgent(v variant) {
	t := e.t
	args := append(slices.Clone(v), "agent", "--config", "agent.hcl", "--probe-interval", "100ms", "--gc-interval", "1h", "--reconcile-interval", "1h")
	started := `msg="started plugin" plugin=hpx`
	if i := slices.Index(args, "--json"); i >= 0 {
		// The agent's JSON form is its log: --log-format json, with -v's RPC traces.
		args = append(slices.Delete(args, i, i+1), "--log-format", "json")
		started = `"msg":"started plugin","plugin":"hpx"`
	}
	cmd := exec.Command("volctl", args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+e.state, "NO_COLOR=1")
	stop := startBackground(t, cmd)
	e.invocations++
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if out := e.volctl("", "plugin", "status", "hpx", "-t", "{{.healthy}}"); out.stdout == "true" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's plugin hpx did not become healthy within 60s")
		}
	}
	out, err := stop()
	if err != nil {
		t.Errorf("volctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !strings.Contains(out, started) {
		t.Errorf("volctl %s: did not start hpx:\n%s", strings.Join(args, " "), out)
	}
	e.scan("volctl "+strings.Join(args, " "), out)
}

// finish stops the hostpath plugin and scans its log, and every log the agent kept.
func (e *leakEnv) finish() {
	out, err := e.hp()
	if err != nil {
		e.t.Errorf("volctl plugin serve hostpath: %v\n%s", err, out)
	}
	if !strings.Contains(out, "NodePublishVolume") && e.mounts {
		e.t.Errorf("the hostpath plugin's -v log shows no NodePublishVolume:\n%s", out)
	}
	e.scan("the -v log of volctl plugin serve hostpath", out)
	e.logs++
	logs, _ := filepath.Glob(filepath.Join(e.state, "logs", "*"))
	if len(logs) == 0 {
		e.t.Error("the agent kept no plugin log")
	}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			e.t.Fatal(err)
		}
		e.scan(p, string(b))
		e.logs++
	}
}

// scanDashboard renders every view of the dashboard against a real engine on the sweep's
// state: each tab, the detail of every row (top and bottom), help, the filter, each action's
// confirmation, and actions that fail with the leaky plugin's echo; every frame is scanned,
// at two sizes and with and without colour.
func (e *leakEnv) scanDashboard(t *testing.T) {
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Config{StateDir: e.state,
		Retry: engine.RetryPolicy{Attempts: 1, Base: time.Millisecond, Max: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	d, err := eng.Dashboard(ctx, tui.DefaultEvents)
	if err != nil {
		t.Fatal(err)
	}
	counts := []int{len(d.Volumes), len(d.Claims), len(d.Plugins), len(d.Events)}
	if slices.Contains(counts, 0) {
		t.Fatalf("a dashboard tab would be empty (volumes, claims, plugins, events: %v)", counts)
	}
	// The detail of every row on a wide screen, where the most text fits; every tab, the help
	// and each dialog also on a small one, in colour.
	for _, screen := range []struct {
		size    tea.WindowSizeMsg
		profile termenv.Profile
		rows    bool
	}{{tea.WindowSizeMsg{Width: 160, Height: 50}, termenv.Ascii, true}, {tea.WindowSizeMsg{Width: 80, Height: 24}, termenv.ANSI256, false}} {
		dr := &dashDriver{e: e, t: t, what: fmt.Sprintf("dashboard %dx%d", screen.size.Width, screen.size.Height)}
		dr.m = tui.New(ctx, tui.Options{Engine: eng, Renderer: fixedRenderer(screen.profile),
			After: func(time.Duration, func() tea.Msg) tea.Cmd { return nil }})
		dr.send(screen.size)
		dr.run(dr.m.Init())
		for tab, n := range counts {
			dr.keys(fmt.Sprint(tab+1), "g", "enter", "G", "esc")
			for range n - 1 {
				if screen.rows {
					dr.keys("down", "enter", "G", "esc")
				}
			}
		}
		dr.keys("1", "?", "esc", "/", "sv", "enter", "d", "esc", "D", "esc", "esc")
		dr.keys("2", "x", "esc", "esc")
	}
	// Actions the leaky plugin fails: releasing t1's claim on sv4 (ControllerUnpublishVolume,
	// which carries the secret, since t1 is its only claim) and deleting sv4.
	dr := &dashDriver{e: e, t: t, what: "dashboard actions"}
	dr.m = tui.New(ctx, tui.Options{Engine: eng, Renderer: fixedRenderer(termenv.Ascii),
		After: func(time.Duration, func() tea.Msg) tea.Cmd { return nil }})
	dr.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	dr.run(dr.m.Init())
	e.leaky.arm(map[string]codes.Code{"ControllerUnpublishVolume": codes.Internal, "DeleteVolume": codes.Internal})
	defer e.leaky.arm(nil)
	dr.keys("2", "/", "t1", "enter", "x", "tab", "enter")
	if !strings.Contains(dr.last, "leaky plugin") {
		t.Errorf("the failed release does not show the plugin's message:\n%s", dr.last)
	}
	dr.keys("esc", "esc", "1", "/", "sv4", "enter", "D", "tab", "enter")
	if !strings.Contains(dr.last, "leaky plugin") && !strings.Contains(dr.last, "claim") {
		t.Errorf("the failed delete shows neither the plugin's message nor the claim in the way:\n%s", dr.last)
	}
	dr.keys("esc", "esc", "4", "g", "enter", "G", "esc")
	d, err = eng.Dashboard(ctx, tui.DefaultEvents)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range d.Events {
		e.scan("event "+ev.Kind, ev.Message)
	}
}

// fixedRenderer renders in profile p on a dark background without asking a terminal, as
// internal/tui's tests do.
func fixedRenderer(p termenv.Profile) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(p)
	r.SetHasDarkBackground(true)
	return r
}

// dashDriver drives a dashboard model by hand as the bubbletea runtime would, running each
// command synchronously (timers are switched off), and scans every frame it renders.
type dashDriver struct {
	e    *leakEnv
	t    *testing.T
	what string
	m    *tui.Model
	last string
}

func (d *dashDriver) view() {
	d.last = d.m.View()
	d.e.frames++
	d.e.scan(d.what, d.last)
}

func (d *dashDriver) send(msg tea.Msg) {
	_, cmd := d.m.Update(msg)
	d.view()
	d.run(cmd)
}

func (d *dashDriver) run(cmd tea.Cmd) {
	queue := []tea.Cmd{cmd}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 1000 {
			d.t.Fatal("the dashboard's commands do not settle")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil, tea.QuitMsg:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		default:
			_, next := d.m.Update(msg)
			d.view()
			queue = append(queue, next)
		}
	}
}

// keys types each key: a name bubbletea knows, or runes.
func (d *dashDriver) keys(keys ...string) {
	named := map[string]tea.KeyType{"enter": tea.KeyEnter, "esc": tea.KeyEscape, "tab": tea.KeyTab, "down": tea.KeyDown}
	for _, k := range keys {
		if kt, ok := named[k]; ok {
			d.send(tea.KeyMsg{Type: kt})
		} else {
			d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
		}
	}
}

// leakyFaults fails the RPCs it is armed for with a message that echoes the whole request,
// secrets and mount flags included, as a careless plugin might: what volctl shows of the
// error must still hold none of them.
type leakyFaults struct {
	mu    sync.Mutex
	armed map[string]codes.Code
}

func (l *leakyFaults) arm(rpcs map[string]codes.Code) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = rpcs
}

func (l *leakyFaults) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	rpc := path.Base(info.FullMethod)
	l.mu.Lock()
	code, ok := l.armed[rpc]
	l.mu.Unlock()
	if ok {
		return nil, status.Errorf(code, "leaky plugin echoes %s: %v", rpc, req)
	}
	return handler(ctx, req)
}

// writeSpecs writes the sweep's spec files into its dir. Every volume carries the secret and
// the mount flag; the plugin specs carry the env value.
func (e *leakEnv) writeSpecs() {
	vol := func(id, plugin, flags, extra string) string {
		return fmt.Sprintf(`id        = %q
name      = %q
type      = "csi"
plugin_id = %q
capacity_min = "1MiB"
%s
capability {
  access_mode     = "multi-node-multi-writer"
  attachment_mode = "file-system"
}

mount_options {
  fs_type     = "ext4"
  mount_flags = [%s]
}

secrets {
  token = %q
}

parameters {
  tier = "fast"
}
`, id, id, plugin, extra, flags, e.secret)
	}
	both := fmt.Sprintf(`"noatime", %q`, e.flag)
	files := map[string]string{
		"sv.hcl":     vol("sv", "mem", both, ""),
		"sv2.hcl":    vol("sv2", "mem", both, ""),
		"sv3.hcl":    vol("sv3", "mem", both, ""),
		"sv4.hcl":    vol("sv4", "mem", both, ""),
		"sv5.hcl":    vol("sv5", "mem", both, ""),
		"su.hcl":     vol("su", "mem", both, ""),
		"sdf0.hcl":   vol("sdf0", "mem", both, ""),
		"sdf1.hcl":   vol("sdf1", "mem", both, ""),
		"svf.hcl":    vol("svf", "mem", both, ""),
		"sdel.hcl":   vol("sdel", "mem", both, ""),
		"sr.hcl":     vol("sr", "mem", both, `external_id = "ext-sr"`),
		"sr2.hcl":    vol("sr2", "mem", both, `external_id = "ext-sr2"`),
		"hv.hcl":     vol("hv", "hp", `"noatime"`, ""),
		"hv-bad.hcl": vol("hv-bad", "hp", both, ""),
		"sv.json": fmt.Sprintf(`{"id": "svj", "name": "svj", "type": "csi", "plugin_id": "mem",
 "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}],
 "mount_options": {"mount_flags": [%q]}, "secrets": {"token": %q}}`, e.flag, e.secret),
		// Errors on the very lines that hold the sentinels, so the snippets show those lines.
		"bad-syntax.hcl": fmt.Sprintf("id = \"bad\"\ntype = \"csi\"\nplugin_id = \"mem\"\nmount_options {\n  mount_flags = [%q, 7 +]\n}\nsecrets {\n  token = %q }\n", e.flag, e.secret),
		"bad-types.hcl":  fmt.Sprintf("id = \"bad\"\ntype = \"csi\"\nplugin_id = \"mem\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\nmount_options {\n  mount_flags = [%q, [%q]]\n}\nsecrets {\n  token = [%q]\n  \"bad key!\" = %q\n}\n", e.flag, e.flag, e.secret, e.secret),
		"bad-hcl1.hcl":   fmt.Sprintf("id = \"bad\"\ntype = \"csi\"\nplugin_id = \"mem\"\ncapability { access_mode = \"single-node-writter\" attachment_mode = \"file-system\" }\nmount_options { mount_flags = [%q] fs_type = 3 }\nsecrets { \"token\" = %q, \"x\" = [%q] }\n", e.flag, e.secret, e.secret),
		"bad.json":       fmt.Sprintf(`{"id": "bad", "type": "csi", "plugin_id": "mem", "mount_options": {"mount_flags": [%q, 1]}, "secrets": {"token": [%q]}}`, e.flag, e.secret),
		"hpx.hcl":        e.pluginSpec("hpx", fmt.Sprintf("{ PLUGIN_TOKEN = %q }", e.env)),
		"hpx-bad.hcl":    e.pluginSpec("hpx", fmt.Sprintf("{ PLUGIN_TOKEN = %q, OTHER = [%q] }", e.env, e.env)) + "plugin \"bad\" { type = \"both\" }\n",
		"agent.hcl":      e.pluginSpec("hpx", fmt.Sprintf("{ PLUGIN_TOKEN = %q }", e.env)),
		"agent-bad.hcl":  "agent {\n  probe_interval = \"soon\"\n}\n" + e.pluginSpec("hpx", fmt.Sprintf("{ PLUGIN_TOKEN = [%q] }", e.env)),
		"g.hcl":          e.groupSpec("g", 2, ""),
		"g2.hcl":         e.groupSpec("g2", 1, ""),
		"g-bad.hcl":      e.groupSpec("gb", 1, `attachment_mode = "block-device"`),
	}
	for name, content := range files {
		writeFile(e.t, filepath.Join(e.dir, name), content)
	}
}

func (e *leakEnv) pluginSpec(id, env string) string {
	return fmt.Sprintf(`plugin %q {
  type   = "monolith"
  socket = %q
  exec {
    command = "volctl"
    args    = ["-v", "plugin", "serve", "hostpath", "--root", %q, "--node-id", "n1"]
    env     = %s
  }
}
`, id, filepath.Join(e.dir, id+".sock"), filepath.Join(e.dir, id+"-root"), env)
}

// groupSpec is a group claiming sv with the sentinel mount flag; extra breaks it.
func (e *leakEnv) groupSpec(name string, count int, extra string) string {
	attach := `attachment_mode = "file-system"`
	if extra != "" {
		attach = extra
	}
	return fmt.Sprintf(`group %q {
  count = %d

  volume "data" {
    type        = "csi"
    source      = "sv"
    access_mode = "multi-node-multi-writer"
    %s

    mount_options {
      mount_flags = [%q]
    }
  }
}
`, name, count, attach, e.flag)
}

// leakyNomad serves the part of Nomad's HTTP API the nomad commands use: every plugin healthy,
// no volume registered, and a registration refused with the whole request echoed back.
func leakyNomad(t *testing.T, sentinels []string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "1") // as Nomad sets it, on its 404s too
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/plugin/csi/"):
			id := strings.TrimPrefix(r.URL.Path, "/v1/plugin/csi/")
			fmt.Fprintf(w, `{"ID":%q,"NodesHealthy":1,"NodesExpected":1}`, id)
		case r.URL.Path == "/v1/volumes": // every namespace's: sv3's storage is no other's
			echo := strings.Join(sentinels[:2], " ")
			json.NewEncoder(w).Encode([]map[string]any{{"ID": "sv3", "Namespace": "default", "PluginID": "mem", "ExternalID": "vol-" + echo}})
		case r.URL.Path == "/v1/volume/csi/sv3" && r.Method == http.MethodGet:
			// Nomad's copy of a volume holds what the plugin told Nomad: the echo too (of the
			// volume secret and mount flag; the plugin env value is gone from the state by now).
			echo := strings.Join(sentinels[:2], " ")
			json.NewEncoder(w).Encode(map[string]any{"ID": "sv3", "Namespace": "default", "PluginID": "mem",
				"Provider": "mem " + echo, "ExternalID": "vol-" + echo, "Context": map[string]string{"echo": echo}})
		case strings.HasPrefix(r.URL.Path, "/v1/volume/csi/") && r.Method == http.MethodGet:
			http.Error(w, "volume not found", http.StatusNotFound)
		default:
			body, _ := io.ReadAll(r.Body)
			// As Nomad's own check refuses one before its Raft apply (a refusal volctl takes as
			// settled: nomad.settledBy), echoing the request.
			http.Error(w, "validation: rejected request: "+string(body), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
