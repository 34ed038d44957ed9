package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// echoingSecret serves the in-memory plugin, which answers CreateVolume with a volume ID
// made of the secret, and NodeGetInfo with a node ID made of it (a hostile plugin echoing it), and creates volume db with
// that secret. volume status shows the ID [REDACTED] (docs/architecture.md, "Data a plugin
// returned"); the test returns the engine to run the nomad commands with.
func echoingSecret(t *testing.T, secret string) (*engine.Engine, func(context.Context) (*engine.Engine, error)) {
	t.Helper()
	return echoingSecretNode(t, secret, true)
}

// echoingSecretNode is echoingSecret, with the node ID echoing the secret only when node.
func echoingSecretNode(t *testing.T, secret string, node bool) (*engine.Engine, func(context.Context) (*engine.Engine, error)) {
	t.Helper()
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	if node {
		cfg.NodeID = "node-" + secret // NodeGetInfo's answer, echoing it too
	}
	mem := csitest.NewMountingMemPlugin(t, cfg)
	// CreateVolume answers with the volume it holds by an ID made of the secret.
	mem.AddVolume(csi.Volume{ID: "vol-" + secret, CapacityBytes: 1 << 30})
	mem.AnswerCreateWith("vol-" + secret)
	_, e, eng := serveMem(t, mem)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if v, err := e.Volume(ctx, "db"); err != nil || !strings.Contains(v.ExternalID, secret) {
		t.Fatalf("the plugin did not echo the secret into the external ID (%q, %v): the test tests nothing", v.ExternalID, err)
	}
	// What every other command shows of it: the ID scrubbed.
	ios, _, out, errOut := iostreams.Test()
	if err := volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "db"}); err != nil {
		t.Fatal(err)
	}
	if s := out.String() + errOut.String(); strings.Contains(s, secret) || !strings.Contains(s, "[REDACTED]") {
		t.Fatalf("volume status should show the external ID scrubbed (the promise this test holds nomad register to):\n%s", s)
	}
	return e, eng
}

// memNomad is the fake Nomad with plugin mem's driver the in-memory plugin's, and its
// list of volumes refused (a token without csi-list-volume) when denyList is set.
func memNomad(t *testing.T, denyList bool) *fakeNomad {
	n := newFakeNomad(t)
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/volumes" && denyList:
			http.Error(w, "Permission denied", http.StatusForbidden)
		case strings.HasPrefix(r.URL.Path, "/v1/plugin/csi/"):
			w.Header().Set("X-Nomad-Index", "1")
			fmt.Fprintf(w, `{"ID":%q,"Provider":"mem.csi.volctl.test","NodesHealthy":1,"NodesExpected":1}`, strings.TrimPrefix(r.URL.Path, "/v1/plugin/csi/"))
		default:
			inner.ServeHTTP(w, r)
		}
	})
	return n
}

// `volctl nomad register --dry-run` in text prints a line per volume naming its external ID,
// "Would register volume "db" in Nomad at ... (plugin "mem", external ID "vol-SECRET")", from
// the volume as the state holds it, unscrubbed: a plugin that echoed a secret into the ID has
// it printed whole, where volume status, --json of the same plan and every other command show
// [REDACTED] (docs/architecture.md: the data a plugin returned is scrubbed where it is shown).
func TestNomadRegisterDryRunTextShowsNoSecretInTheExternalID(t *testing.T) {
	const secret = "dryrun-s3cret-SENTINEL-6402"
	e, eng := echoingSecret(t, secret)
	n := memNomad(t, false)
	for _, json := range []bool{true, false} {
		ios, _, out, errOut := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: eng, Nomad: n.client, Volumes: []string{"db"}, DryRun: true,
			Exporter: exportFlags{JSON: json}})
		if err != nil {
			t.Fatalf("--dry-run (json %v): %v", json, err)
		}
		all := out.String() + errOut.String()
		if err != nil {
			all += err.Error()
		}
		if !strings.Contains(all, "db") {
			t.Fatalf("--dry-run (json %v) printed nothing of volume db:\n%s", json, all)
		}
		if strings.Contains(all, secret) {
			t.Errorf("nomad register --dry-run (json %v) shows the secret the plugin echoed into the external ID:\n%s", json, all)
		}
	}
	// Claimed, the volume is attached to the plugin's node ID, which echoes the secret too:
	// the plan's "but" line names it (attachedUnderClaims), as the state holds it.
	if _, err := e.Claim(context.Background(), engine.ClaimRequest{VolumeID: "db", Alloc: "a1"}); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: eng, Nomad: n.client, Volumes: []string{"db"}, DryRun: true})
	if ExitCode(err) != ExitConflict || !strings.Contains(out.String(), "attached to node") {
		t.Fatalf("--dry-run of a claimed volume: %v (exit %d)\n%s%s\nwant exit 4 saying it is attached", err, ExitCode(err), out, errOut)
	}
	for _, line := range strings.Split(out.String()+errOut.String(), "\n") {
		if strings.Contains(line, "attached to node") && strings.Contains(line, secret) {
			t.Errorf("nomad register --dry-run shows the secret the plugin echoed into its node ID:\n%s", line)
		}
	}
}

// A token whose policy does not grant csi-list-volume: the registration, its --dry-run and
// nomad status note on stderr that volctl could not look for the volume's storage under
// another ID (nomad.Client.TwinsUnchecked), naming the volume's external ID as the state holds
// it, unscrubbed (only c.Hide, the Nomad credentials): a secret a plugin echoed into the ID is
// printed whole in the note, which --json prints to stderr too.
func TestTwinsUncheckedNoteShowsNoSecret(t *testing.T) {
	const secret = "twins-s3cret-SENTINEL-6403"
	_, eng := echoingSecret(t, secret)
	check := func(what string, err error, errOut string) {
		t.Helper()
		if !strings.Contains(errOut, "csi-list-volume") {
			t.Fatalf("%s with the list refused: %v\n%s\nwant the note that it could not look for twins", what, err, errOut)
		}
		if strings.Contains(errOut, secret) {
			t.Errorf("%s shows on stderr the secret the plugin echoed into the external ID:\n%s", what, errOut)
		}
	}
	for _, json := range []bool{false, true} {
		n := memNomad(t, true)
		ios, _, _, errOut := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: eng, Nomad: n.client, Volumes: []string{"db"}, DryRun: true,
			Exporter: exportFlags{JSON: json}})
		check(fmt.Sprintf("nomad register --dry-run (json %v)", json), err, errOut.String())
	}
	n := memNomad(t, true)
	ios, _, _, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: eng, Nomad: n.client, Volumes: []string{"db"}})
	check("nomad register", err, errOut.String())
	ios, _, _, errOut = iostreams.Test()
	err = nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: eng, Nomad: n.client, Volumes: []string{"db"}})
	check("nomad status", err, errOut.String())
}

// Nomad has the volume's storage (its external ID) as another volume, in namespace team:
// register --dry-run says it would be refused, on stdout, quoting nomad.Client.TwinsError,
// which names the external ID as the state holds it: a secret a plugin echoed into the ID is
// printed whole on the plan's "but" line.
func TestDryRunTwinsRefusalShowsNoSecret(t *testing.T) {
	const secret = "twinref-s3cret-SENTINEL-6404"
	e, eng := echoingSecret(t, secret)
	info, err := e.Volume(context.Background(), "db")
	if err != nil {
		t.Fatal(err)
	}
	n := memNomad(t, false)
	n.take("team", "db")
	n.mu.Lock()
	n.sent["team/db"] = map[string]any{"ExternalID": info.ExternalID, "PluginID": "mem"}
	n.mu.Unlock()
	ios, _, out, errOut := iostreams.Test()
	err = nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: eng, Nomad: n.client, Volumes: []string{"db"}, DryRun: true})
	if ExitCode(err) != ExitConflict || !strings.Contains(out.String(), "in namespace team") {
		t.Fatalf("--dry-run with Nomad holding the storage as another volume: %v (exit %d)\n%s%s\nwant exit 4 naming team's volume", err, ExitCode(err), out, errOut)
	}
	for _, line := range strings.Split(out.String()+errOut.String(), "\n") {
		if strings.Contains(line, secret) && !strings.HasPrefix(line, "Would register") { // that line: TestNomadRegisterDryRunTextShowsNoSecretInTheExternalID
			t.Errorf("nomad register --dry-run shows the secret the plugin echoed into the external ID:\n%s", line)
		}
	}
}

// events reads the log, then reads the secrets to scrub what it read with (redactOutput), in
// two transactions. Another process deleting the volume between the two (a `volctl volume
// delete` while `volctl events` or `events --follow` runs) scrubs the secret out of the log
// and out of the state in one commit (store.WithForget): the events already read hold it raw,
// the second read no longer knows it, and they are printed whole. Only the deleting process
// keeps scrubbing what it let go (store.Store.ForgottenHere); here the events command is
// another process (a second engine on the same state dir).
func TestEventsReadBeforeAnotherProcessDeletesTheVolumeShowNoSecret(t *testing.T) {
	const secret = "evrace-s3cret-SENTINEL-6405"
	// Only the external ID holds the secret: once the volume is deleted no record holds it
	// (a node ID echoing it would keep it among the values scrubbed: kept_secrets).
	e, eng := echoingSecretNode(t, secret, false)
	other := openEngine(t, e.StateDir()) // the deleting process
	evs, err := e.Events(context.Background(), 0, engine.EventFilter{VolumeID: "db"})
	if err != nil {
		t.Fatal(err)
	}
	raw := false
	for _, ev := range evs {
		raw = raw || strings.Contains(ev.Message, secret)
	}
	if !raw {
		t.Fatalf("no event of db words the echoed external ID: the test tests nothing: %+v", evs)
	}
	afterFirstEventsRead = func() {
		if err := other.DeleteVolume(context.Background(), "db"); err != nil {
			t.Errorf("delete by the other process: %v", err)
		}
	}
	defer func() { afterFirstEventsRead = nil }()
	ios, _, out, errOut := iostreams.Test()
	err = eventsRun(context.Background(), &EventsOptions{IO: ios, Engine: eng, Now: nowFunc, Filter: engine.EventFilter{VolumeID: "db"},
		Exporter: exportFlags{JSON: true}})
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	afterFirstEventsRead = nil
	if s := out.String() + errOut.String(); strings.Contains(s, secret) {
		t.Errorf("events read before another process deleted the volume shows the secret the plugin echoed:\n%s", s)
	}
	// Once the delete committed, the log itself is scrubbed: a later read shows nothing.
	ios, _, out, _ = iostreams.Test()
	if err := eventsRun(context.Background(), &EventsOptions{IO: ios, Engine: eng, Now: nowFunc, Filter: engine.EventFilter{VolumeID: "db"},
		Exporter: exportFlags{JSON: true}}); err != nil || strings.Contains(out.String(), secret) {
		t.Errorf("events after the delete: %v\n%s", err, out)
	}
}
