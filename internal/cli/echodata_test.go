package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// echoingMemConfig is the in-memory plugin with text in its identity (version, manifest), its
// node ID and the publish context it returns.
func echoingMemConfig(text string) csitest.MemConfig {
	cfg := csitest.DefaultMemConfig()
	cfg.Version = "1.0-" + text
	cfg.Manifest = map[string]string{"echo": text}
	cfg.NodeID = "node-" + text
	cfg.PublishContext = map[string]string{"echo": text}
	return cfg
}

// TestPluginDataEchoingSecretsRedacted plays a plugin that echoes a volume's secret not in an
// error but in the data it returns: the volume_context of CreateVolume, the publish_context of
// ControllerPublishVolume, and its identity (vendor_version, manifest) and node ID. volctl keeps
// those raw (it sends them back to the plugin), but no known secret value may appear where they
// are printed: volume status and status in text, --json and -t, plugin register and status,
// snapshot create and list (the plugin's snapshot IDs, and a --secret given on the command
// line), and errors volctl words from such data (a topology the node does not have).
func TestPluginDataEchoingSecretsRedacted(t *testing.T) {
	const secret = "echodata-s3cret-91c2"
	const listSecret = "listsecret-91c2"
	ctx := context.Background()
	mem := csitest.NewMountingMemPlugin(t, echoingMemConfig(secret))
	echoCtx := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			for k, v := range req.(*csipb.CreateVolumeRequest).GetSecrets() {
				if k == "insecure" {
					continue
				}
				r.Volume.VolumeContext = map[string]string{"echo": "ctx:" + v}
				if k == "topo" {
					r.Volume.AccessibleTopology = []*csipb.Topology{{Segments: map[string]string{"zone": v}}}
				}
				if k == "extid" {
					r.Volume.VolumeId = "vol-" + v
				}
			}
		}
		if r, ok := resp.(*csipb.CreateSnapshotResponse); ok && err == nil {
			for _, v := range req.(*csipb.CreateSnapshotRequest).GetSecrets() {
				r.Snapshot.SnapshotId += "-" + v
			}
		}
		if r, ok := resp.(*csipb.ListSnapshotsResponse); ok && err == nil {
			for _, v := range req.(*csipb.ListSnapshotsRequest).GetSecrets() {
				for _, e := range r.Entries {
					e.Snapshot.SnapshotId += "-" + v
				}
			}
		}
		return resp, err
	}
	socket, e, eng := serveMem(t, mem, csitest.WithInterceptor(echoCtx))
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		// "true" too: a short secret equal to a JSON literal must not break the JSON.
		Secrets:      spec.Secrets{"token": secret, "insecure": "true"},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "a1"}); err != nil {
		t.Fatal(err)
	}
	if v, err := e.Volume(ctx, "db"); err != nil || !strings.Contains(v.Context["echo"], secret) {
		t.Fatalf("the plugin did not echo the secret into the volume context (%v, %v): the test does not test anything", v.Context, err)
	}
	exporters := map[string]exportFlags{
		"text": {}, "--json": {JSON: true}, "-t": {Template: `{{printf "%v" .}}`},
	}
	check := func(what string, out ...fmt.Stringer) {
		t.Helper()
		for _, o := range out {
			if s := o.String(); strings.Contains(s, secret) || strings.Contains(s, listSecret) {
				t.Errorf("%s shows the secret a plugin echoed in its data:\n%s", what, s)
			}
		}
	}
	for name, x := range exporters {
		ios, _, out, errOut := iostreams.Test()
		if err := pluginRegisterRun(ctx, &PluginRegisterOptions{IO: ios, Engine: eng, ID: "mem", Type: "monolith", Socket: socket, Exporter: x}); err != nil {
			t.Fatal(err)
		}
		check("plugin register "+name, out, errOut)
		ios, _, out, errOut = iostreams.Test()
		if err := snapshotCreateRun(ctx, &SnapshotCreateOptions{IO: ios, Engine: eng, VolumeID: "db", Name: "s-" + name, Exporter: x}); err != nil {
			t.Fatal(err)
		}
		check("snapshot create "+name, out, errOut)
		ios, _, out, errOut = iostreams.Test()
		if err := snapshotListRun(ctx, &SnapshotListOptions{IO: ios, Engine: eng, Now: nowFunc, PluginID: "mem", Secrets: secretFlags{Values: []string{"k=" + listSecret}}, Exporter: x}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "[REDACTED]") {
			t.Errorf("snapshot list %s: the plugin did not echo the --secret into its snapshot IDs:\n%s", name, out)
		}
		check("snapshot list "+name, out, errOut)
	}

	// plugin probe asks the plugin directly, and prints its identity and node ID as plugin
	// status does, and its -v trace the answers; neither may show the secret it echoes there.
	for name, x := range exporters {
		var trace bytes.Buffer
		ios, _, out, errOut := iostreams.Test()
		err := pluginProbeRun(ctx, &PluginProbeOptions{IO: ios, Socket: socket, Timeout: time.Minute, Exporter: x,
			Logger: slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelDebug})),
			State:  func(context.Context) *engine.Engine { return e }})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "[REDACTED]") || !strings.Contains(trace.String(), "GetPluginInfo") {
			t.Errorf("plugin probe %s: the plugin did not echo the secret into its identity, or no trace was written:\n%s\n%s", name, out, &trace)
		}
		check("plugin probe "+name, out, errOut, &trace)
	}

	// Shell completion offers the recorded snapshots' IDs, which the plugin made of the
	// secret: they are output too, and are left out (one cannot type what it would show).
	plain, err := e.CreateSnapshot(ctx, "db", "plain", nil) // sent db's secrets: its ID holds them too
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plain.ID, secret) {
		t.Fatalf("the plugin did not echo the secret into the snapshot ID %q: the test tests nothing", plain.ID)
	}
	{
		ios, _, out, errOut := iostreams.Test()
		f := NewFactory(ios)
		f.engine = e
		root := NewRootCmd(f)
		root.SetArgs([]string{"__complete", "volume", "snapshot", "delete", "mem", ""})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		f.engine = nil // closed by the cleanup
		if !strings.Contains(out.String(), ":4") {
			t.Errorf("__complete did not complete:\n%s", out)
		}
		check("the completion of snapshot IDs", out, errOut)
	}

	// export nomad writes the context as the plugin gave it only with --include-secrets.
	for _, include := range []bool{false, true} {
		dir := t.TempDir()
		ios, _, out, errOut := iostreams.Test()
		if err := exportNomadRun(ctx, &ExportNomadOptions{IO: ios, Engine: eng, Volumes: []string{"db"}, OutDir: dir, IncludeSecrets: include}); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("export nomad (include secrets %v)", include), out, errOut)
		b, err := os.ReadFile(filepath.Join(dir, "volume-db.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), "ctx:"+secret); got != include {
			t.Errorf("export nomad (include secrets %v): the file holds the context the plugin echoed the secret into: %v\n%s", include, got, b)
		}
	}

	// A volume whose plugin reports the secret as its topology: the claim is refused in words
	// that name the topology; the error as volctl prints it must not hold the secret.
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "topo", Name: "topo", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"topo": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	// Nor does export nomad write a volume's topology or external ID that holds the secret,
	// plugin data it cannot write as a placeholder (the file would name another volume), into
	// a file others may read: without --include-secrets it refuses, naming the field; with it
	// the file is 0600, as any file holding secrets.
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "extid", Name: "extid", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"extid": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	for vol, field := range map[string]string{"topo": "accessible topology", "extid": "external ID"} {
		for _, include := range []bool{false, true} {
			dir := t.TempDir()
			ios, _, out, errOut := iostreams.Test()
			err := exportNomadRun(ctx, &ExportNomadOptions{IO: ios, Engine: eng, Volumes: []string{vol}, OutDir: dir, IncludeSecrets: include})
			check(fmt.Sprintf("export nomad %s (include secrets %v)", vol, include), out, errOut)
			b, rerr := os.ReadFile(filepath.Join(dir, "volume-"+vol+".hcl"))
			if !include {
				if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "--include-secrets") || strings.Contains(err.Error(), secret) {
					t.Errorf("export nomad %s = %v, want a refusal naming its %s and --include-secrets, not the secret", vol, err, field)
				}
				if rerr == nil {
					t.Errorf("export nomad %s refused, but wrote its file:\n%s", vol, b)
				}
				continue
			}
			if err != nil || rerr != nil || !strings.Contains(string(b), secret) {
				t.Errorf("export nomad %s --include-secrets = %v, %v: want its file, holding its %s as the plugin gave it:\n%s", vol, err, rerr, field, b)
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, "volume-"+vol+".hcl")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("export nomad %s --include-secrets: %v, %v; want mode 0600", vol, fi.Mode(), err)
			}
		}
	}

	_, claimErr := e.Claim(ctx, engine.ClaimRequest{VolumeID: "topo", Alloc: "a2"})
	if claimErr == nil || !strings.Contains(claimErr.Error(), secret) {
		t.Fatalf("claim of topo = %v: want the refusal naming the echoed topology, or the test tests nothing", claimErr)
	}
	ios, _, _, errOut := iostreams.Test()
	f := NewFactory(ios)
	f.engine = e
	code := f.Report(f.RedactError(ctx, claimErr))
	f.engine = nil // closed by the cleanup
	if want := ExitCode(claimErr); code != want {
		t.Errorf("exit code %d after redaction, want %d", code, want)
	}
	check("the claim's error", errOut)

	// The event log holds what the engine said, and the volume's creation with its external ID.
	for name, x := range exporters {
		ios, _, out, errOut := iostreams.Test()
		if err := eventsRun(ctx, &EventsOptions{IO: ios, Engine: eng, Now: nowFunc, Exporter: x}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "topo") {
			t.Errorf("events %s: the log does not show the topo volume:\n%s", name, out)
		}
		check("events "+name, out, errOut)
	}

	for name, x := range exporters {
		for _, id := range []string{"db", ""} {
			ios, _, out, errOut := iostreams.Test()
			if err := statusRun(ctx, &StatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: id, Exporter: x, MaxVolumes: 20}); err != nil {
				t.Fatal(err)
			}
			if s := out.String() + errOut.String(); strings.Contains(s, secret) {
				t.Errorf("status %q %s shows the secret a plugin echoed in its data:\n%s", id, name, s)
			}
			if x.JSON && (!json.Valid(out.Bytes()) || !strings.Contains(out.String(), "true")) {
				t.Errorf("status %q --json is no longer valid JSON with its booleans:\n%s", id, out)
			}
		}
		for _, id := range []string{"mem", ""} {
			ios, _, out, errOut := iostreams.Test()
			if err := pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: id, Exporter: x}); err != nil {
				t.Fatal(err)
			}
			if s := out.String() + errOut.String(); strings.Contains(s, secret) {
				t.Errorf("plugin status %q %s shows the secret a plugin echoed in its data:\n%s", id, name, s)
			}
		}
	}
}

// hostileText is what a plugin may put in any string it returns: an OSC window title ended
// by BEL, a clear-screen CSI, a C1 CSI (U+009B), a carriage return and a newline.
const hostileText = "\x1b]0;pwned\x07\x1b[2J\u009b31m\rX\nY"

// hostileShown is hostileText as volctl prints it in text: every control character as a
// visible escape.
const hostileShown = `\x1b]0;pwned\a\x1b[2J\u009b31m\rX\nY`

// TestPluginDataControlCharactersEscaped plays a plugin whose identity, node ID, topology,
// publish and volume context carry terminal escape sequences. The data is kept as the plugin
// gave it (it goes back to the plugin), and --json keeps it exact; but the text volctl prints
// for a person — tables, detail lines, the registration line, events, an error worded from
// that data — must show each control character as an escape: a plugin must not retitle the
// user's window, clear the screen or forge a line of output.
func TestPluginDataControlCharactersEscaped(t *testing.T) {
	ctx := context.Background()
	cfg := echoingMemConfig(hostileText)
	cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "a" + hostileText}}
	mem := csitest.NewMountingMemPlugin(t, cfg)
	answer := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			r.Volume.VolumeContext = map[string]string{"c" + hostileText: hostileText}
			zone := "a" + hostileText
			if strings.Contains(req.(*csipb.CreateVolumeRequest).GetName(), "elsewhere") {
				zone = "b" + hostileText // not the node's: a claim is refused naming it
			}
			r.Volume.AccessibleTopology = []*csipb.Topology{{Segments: map[string]string{"zone": zone}}}
		}
		return resp, err
	}
	socket, e, eng := serveMem(t, mem, csitest.WithInterceptor(answer))
	createSingleWriter(t, e, "db", "elsewhere")
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "a1"}); err != nil {
		t.Fatal(err)
	}

	// check: lines says whether the text may hold lines of its own (an error joining several:
	// a plugin's newline there is not escaped, its other control characters are).
	check := func(what string, lines bool, out ...fmt.Stringer) {
		t.Helper()
		shown := false
		for _, o := range out {
			s := o.String()
			if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f }); i >= 0 {
				t.Errorf("%s prints control character %q raw to the terminal:\n%q", what, s[i], s)
			}
			if !lines && strings.Contains(s, "\nY") {
				t.Errorf("%s lets a plugin's newline start a line of its own:\n%q", what, s)
			}
			shown = shown || strings.Contains(s, hostileShown)
		}
		if !shown && !lines {
			t.Errorf("%s does not show the plugin's text escaped (%s)", what, hostileShown)
		}
	}
	run := func(what string, f func(ios *iostreams.IOStreams) error) {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		if err := f(ios); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		check(what, false, out, errOut)
	}
	run("plugin register", func(ios *iostreams.IOStreams) error {
		return pluginRegisterRun(ctx, &PluginRegisterOptions{IO: ios, Engine: eng, ID: "mem", Type: "monolith", Socket: socket})
	})
	for _, id := range []string{"", "mem"} {
		run("plugin status "+id, func(ios *iostreams.IOStreams) error {
			return pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: id})
		})
		run("status "+id, func(ios *iostreams.IOStreams) error {
			return statusRun(ctx, &StatusOptions{IO: ios, Engine: eng, Now: nowFunc, MaxVolumes: 20})
		})
	}
	run("volume status db", func(ios *iostreams.IOStreams) error {
		return volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "db"})
	})
	run("events", func(ios *iostreams.IOStreams) error {
		return eventsRun(ctx, &EventsOptions{IO: ios, Engine: eng, Now: nowFunc})
	})

	// An error worded from the plugin's data: the topology it gave the volume (the engine
	// escapes it itself), and any error holding such text as it is (Report escapes it).
	_, claimErr := e.Claim(ctx, engine.ClaimRequest{VolumeID: "elsewhere", Alloc: "a2"})
	if claimErr == nil || !strings.Contains(claimErr.Error(), `zone="b`) { // the value quoted, escaped (segmentWord)
		t.Fatalf("claim of elsewhere = %v: want a refusal naming the plugin's topology, or this tests nothing", claimErr)
	}
	for what, err := range map[string]error{
		"the claim's error":            claimErr,
		"an error holding plugin text": fmt.Errorf("plugin %q answered %s: %w", "mem", "vol"+hostileText, engine.ErrConflict),
	} {
		ios, _, _, errOut := iostreams.Test()
		if code, want := NewFactory(ios).Report(err), ExitCode(err); code != want {
			t.Errorf("%s: exit code %d, want %d", what, code, want)
		}
		check(what, true, errOut)
		if !strings.Contains(errOut.String(), `\x1b]0;pwned\a\x1b[2J\u009b31m\rX`) {
			t.Errorf("%s does not show the plugin's text escaped:\n%s", what, errOut)
		}
	}

	// --json is the data, exact: encoding/json escapes C0 itself, and a script gets back what
	// the plugin said.
	ios, _, out, _ := iostreams.Test()
	if err := pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "mem", Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `\u001b]0;pwned\u0007\u001b[2J`) {
		t.Errorf("plugin status --json changed the plugin's version:\n%s", out)
	}
}

// TestExportNotesDoNotShowAnEchoedSecret plays a plugin whose name (GetPluginInfo) holds a
// volume's secret: export nomad's note that the plugin is not volctl's own names it, and must
// show [REDACTED] there, as plugin status does.
func TestExportNotesDoNotShowAnEchoedSecret(t *testing.T) {
	const secret = "notesecret-4be1"
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "mem.csi." + secret
	_, e, eng := serveMem(t, csitest.NewMountingMemPlugin(t, cfg))
	createWithSecret(t, e, "db", secret)
	ios, _, out, errOut := iostreams.Test()
	if err := exportNomadRun(ctx, &ExportNomadOptions{IO: ios, Engine: eng, Volumes: []string{"db"}, OutDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if s := out.String() + errOut.String(); strings.Contains(s, secret) || !strings.Contains(errOut.String(), "is not volctl's own") {
		t.Errorf("export nomad's notes show the secret the plugin's name holds, or no note names the plugin:\n%s", s)
	}
}

// TestWarningsDoNotShowAnEchoedNodeID plays a plugin whose node ID (NodeGetInfo) holds a
// volume's secret, and whose ControllerUnpublishVolume fails: a forced detach leaves the
// attachment to that node owed, and a forced deregister forgets it, each warning on stderr
// (and detach in its --json) with the node named. Those warnings are output like any other,
// and must show [REDACTED] for the secret, as volume status does for the node; and so must
// the event log, whose deregistration event names the node too, after the secret has left
// the state with the volume.
func TestWarningsDoNotShowAnEchoedNodeID(t *testing.T) {
	const secret = "nodesecret-77d0"
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-" + secret
	faults := csitest.NewFaults()
	_, e, eng := serveMem(t, csitest.NewMountingMemPlugin(t, cfg), csitest.WithFaults(faults))
	createWithSecret(t, e, "db", secret)
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "a1"}); err != nil {
		t.Fatal(err)
	}
	faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Internal)
	yes := func(bool, string) error { return nil }
	check := func(what string, wantWarning bool, out ...fmt.Stringer) {
		t.Helper()
		var all strings.Builder
		for _, o := range out {
			all.WriteString(o.String())
		}
		if strings.Contains(all.String(), secret) || wantWarning && !strings.Contains(all.String(), "Warning:") {
			t.Errorf("%s shows the secret the plugin's node ID holds, or warns of nothing:\n%s", what, &all)
		}
	}
	for name, x := range map[string]exportFlags{"text": {}, "--json": {JSON: true}} {
		ios, _, out, errOut := iostreams.Test()
		_ = volumeDetachRun(ctx, &VolumeDetachOptions{IO: ios, Engine: eng, Confirm: yes, VolumeID: "db", Force: true, Yes: true, Exporter: x})
		check("volume detach --force "+name, name == "text", out, errOut)
	}
	ios, _, out, errOut := iostreams.Test()
	if err := volumeDeregisterRun(ctx, &DeregisterOptions{IO: ios, Engine: eng, Confirm: yes, ID: "db", Force: true, Yes: true}); err != nil {
		t.Fatal(err)
	}
	check("volume deregister --force", true, out, errOut)
	ios, _, out, errOut = iostreams.Test()
	if err := eventsRun(ctx, &EventsOptions{IO: ios, Engine: eng, Now: nowFunc}); err != nil {
		t.Fatal(err)
	}
	check("events", false, out, errOut)
}

// TestDetachDoesNotShowAnEchoedNodeID: a plugin whose node ID holds a volume's secret
// attaches the volume, then comes back without PUBLISH_UNPUBLISH_VOLUME; a forced detach
// drops the attachment record with a warning naming the node, on stderr and in its --json,
// which must show [REDACTED] for the secret, as volume status does.
func TestDetachDoesNotShowAnEchoedNodeID(t *testing.T) {
	const secret = "detachsecret-5a3c"
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-" + secret
	socket, stop := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, cfg)))
	e := openEngine(t, filepath.Join(t.TempDir(), "state"))
	eng := func(context.Context) (*engine.Engine, error) { return e, nil }
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"db", "db2"} {
		createWithSecret(t, e, id, secret)
		if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: id, Alloc: "a-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	cfg.Controller.PublishUnpublishVolume = false
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMountingMemPlugin(t, cfg)))
	for vol, x := range map[string]exportFlags{"db": {}, "db2": {JSON: true}} {
		ios, _, out, errOut := iostreams.Test()
		err := volumeDetachRun(ctx, &VolumeDetachOptions{IO: ios, Engine: eng, Confirm: func(bool, string) error { return nil },
			VolumeID: vol, Force: true, Yes: true, Exporter: x})
		s := out.String() + errOut.String()
		if err != nil || strings.Contains(s, secret) || !strings.Contains(s, "PUBLISH_UNPUBLISH_VOLUME") {
			t.Errorf("volume detach --force %s (json %v) = %v; it shows the secret the node ID holds, or does not warn of the attachment dropped:\n%s", vol, x.JSON, err, s)
		}
	}
}

// createWithSecret creates volume id on plugin "mem", single-node-writer, with secret as its
// token.
func createWithSecret(t *testing.T, e *engine.Engine, id, secret string) {
	t.Helper()
	if _, err := e.CreateVolume(context.Background(), spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
}
