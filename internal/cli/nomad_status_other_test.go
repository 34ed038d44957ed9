package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// runNomadStatusOf runs `volctl nomad status db`, as JSON (decoded into maps, so that a field
// the command lacks fails the test rather than its build) and as the table, with its notes.
func runNomadStatusOf(t *testing.T, h *cliHarness, n *fakeNomad) (st []map[string]any, table, notes string) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"},
		Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || len(st) != 1 {
		t.Fatalf("nomad status --json: %v\n%s", err, out)
	}
	ios, _, out, errOut := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}}); err != nil {
		t.Fatal(err)
	}
	return st, out.String(), errOut.String()
}

// A Nomad volume of the same ID that is not this one — registered by someone else, or by
// another volctl host whose own volume "db" it is (another external ID) — is not this volume
// in Nomad: `volctl nomad status` said "registered" (IN NOMAD yes) and showed that volume's
// allocs as this one's claims, so the user of a volume volctl still claims read it as handed
// over and in use there. It now says Nomad has another volume by the ID, and how it differs.
func TestNomadStatusNamesAnotherVolumeByTheID(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	n.mu.Lock()
	n.vols["default/db"] = true
	n.sent["default/db"] = map[string]any{"ExternalID": "other-hosts-db", "PluginID": "hp"}
	n.mu.Unlock()
	st, table, notes := runNomadStatusOf(t, h, n)
	if st[0]["registered"] != false {
		t.Errorf("status: registered = %v with Nomad's volume db another one (external ID other-hosts-db): %v", st[0]["registered"], st[0])
	}
	if a, _ := st[0]["another_volume"].([]any); len(a) == 0 || !strings.Contains(a[0].(string), `external_id "other-hosts-db"`) {
		t.Errorf("status --json: another_volume = %v, want it to name Nomad's external ID", st[0]["another_volume"])
	}
	if st[0]["nomad_namespace"] != "default" {
		t.Errorf("status --json: nomad_namespace = %v, want default, the namespace asked", st[0]["nomad_namespace"])
	}
	if row := strings.Split(strings.TrimSpace(table), "\n"); len(row) != 2 || !strings.Contains(row[1], "another") {
		t.Errorf("status table:\n%s\nwant IN NOMAD to say another volume", table)
	}
	for _, want := range []string{`volume "db"`, "another volume", `external_id "other-hosts-db"`, "namespace default"} {
		if !strings.Contains(notes, want) {
			t.Errorf("status notes: %q\nwant %q", notes, want)
		}
	}
}

// Nomad changed the volume after the handover (its capacity and mount options edited with
// `nomad volume register`): it is still this volume, in Nomad and claimed there, but volctl's
// copy is not what Nomad uses. `volctl nomad status` said nothing of it; it now names the
// fields that differ.
func TestNomadStatusNamesWhatNomadChanged(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.readBack = func(v map[string]any) {
		v["RequestedCapacityMin"] = 1 << 30
		v["MountOptions"] = map[string]any{"FSType": "xfs", "MountFlags": []string{"noatime"}}
	}
	n.mu.Unlock()
	st, _, notes := runNomadStatusOf(t, h, n)
	if st[0]["registered"] != true {
		t.Fatalf("status: registered = %v for the volume Nomad has, changed", st[0]["registered"])
	}
	d, _ := st[0]["differs"].([]any)
	if len(d) != 2 || d[0] != "mount_options" || d[1] != "capacity" {
		t.Errorf("status --json: differs = %v, want [mount_options capacity]", st[0]["differs"])
	}
	for _, want := range []string{`volume "db"`, "mount_options, capacity", "volctl nomad register --dry-run db"} {
		if !strings.Contains(notes, want) {
			t.Errorf("status notes: %q\nwant %q", notes, want)
		}
	}
}

// NOMAD_NAMESPACE=* (which the nomad CLI takes as every namespace, for listings) names no one
// namespace. Nomad answers a read of a volume in namespace "*" with its 404, so `volctl nomad
// status` said a volume Nomad has in the default namespace was not in Nomad; and a
// registration in "*" is one Nomad refuses (no such namespace), with volctl advising
// `nomad namespace apply *`, a name Nomad refuses too. Reads now ask the namespace the
// volume's spec names, and a registration of a volume of the default namespace is refused
// before anything is sent, saying what to set.
func TestNomadNamespaceWildcard(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.vols["default/db"] = true // this volume, registered there (by `nomad volume register`)
	n.sent["default/db"] = map[string]any{"ExternalID": info.ExternalID, "PluginID": "hp"}
	n.mu.Unlock()
	t.Setenv("NOMAD_NAMESPACE", "*")
	st, _, _ := runNomadStatusOf(t, h, n)
	if st[0]["registered"] != true || st[0]["nomad_namespace"] != "default" {
		t.Errorf("with NOMAD_NAMESPACE=*, status of a volume Nomad has in the default namespace: registered %v, asked in %v", st[0]["registered"], st[0]["nomad_namespace"])
	}
	n.mu.Lock()
	delete(n.vols, "default/db")
	n.mu.Unlock()
	_, _, err = registerIn(h, n)
	n.mu.Lock()
	puts := len(n.puts)
	n.mu.Unlock()
	if puts != 0 || handedOver(t, h) {
		t.Fatalf("with NOMAD_NAMESPACE=*, register sent %d registration(s), marked=%v: %v", puts, handedOver(t, h), err)
	}
	for _, want := range []string{`volume "db"`, "NOMAD_NAMESPACE=*", "unset NOMAD_NAMESPACE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("register with NOMAD_NAMESPACE=*: %v\nwant it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "namespace apply") {
		t.Errorf("register with NOMAD_NAMESPACE=*: %v\nadvises creating namespace *", err)
	}
}

// `volctl nomad release` asks Nomad in the namespace the volume was handed over to, whatever
// NOMAD_NAMESPACE says now, and says which: its refusal named the address alone ("still
// registered in Nomad at ADDR"), and its success too, so a user whose NOMAD_NAMESPACE names
// another could not tell where volctl looked, nor where to look.
func TestNomadReleaseSaysWhichNamespace(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	t.Setenv("NOMAD_NAMESPACE", "team")
	if _, _, err := registerIn(h, n); err != nil || !n.has("team", "db") {
		t.Fatalf("register with NOMAD_NAMESPACE=team: %v", err)
	}
	t.Setenv("NOMAD_NAMESPACE", "other")
	_, err := runNomadRelease(h, n.client, nil)
	if ExitCode(err) != ExitConflict || !strings.Contains(err.Error(), "still registered in Nomad at "+n.srv.URL+" (namespace team)") {
		t.Errorf("release while Nomad has it in namespace team: %v (exit %d), want it to name namespace team", err, ExitCode(err))
	}
	n.mu.Lock()
	delete(n.vols, "team/db")
	n.mu.Unlock()
	out, err := runNomadRelease(h, n.client, nil)
	if err != nil || handedOver(t, h) || !strings.Contains(out, `Took volume "db" back from Nomad at `+n.srv.URL+" (namespace team)") {
		t.Errorf("release once Nomad has let go of it: %q, %v; want it to name namespace team", out, err)
	}
}

// Nomad answers a volume's mount flags, however many, as one "[REDACTED]": a volume handed over
// with two is not one Nomad changed since. Before, `volctl nomad status` said its copy differs
// in mount_options (changed in Nomad since it was registered), and `volctl nomad register
// --dry-run` that registering it again would update them, for every volume with two flags or
// more, just after its handover.
func TestNomadStatusOfAVolumeWithMountFlagsIsNotChanged(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "mf", Name: "mf", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "nodev"}}}); err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"mf"}}); err != nil {
		t.Fatal(err)
	}
	ios, _, out, _ := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"mf"},
		Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatal(err)
	}
	var st []map[string]any
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || len(st) != 1 {
		t.Fatalf("nomad status --json: %v\n%s", err, out)
	}
	if st[0]["registered"] != true || st[0]["differs"] != nil {
		t.Errorf("status of a volume with two mount flags just handed over: registered %v, differs %v; want registered, no difference", st[0]["registered"], st[0]["differs"])
	}
	ios, _, out, _ = iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"mf"}, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "nothing would change") {
		t.Errorf("register --dry-run of the volume just handed over: %q, want nothing to change", out)
	}
}

// `volctl nomad register --dry-run` and `volctl nomad status` say of Nomad's copy what a
// registration would change there, as Nomad updates a registered volume (nomad.Changes,
// nomad.Refused). Before: parameters and a context Nomad's copy has and volctl's lacks (the
// plugin's, set in Nomad) were said to be updated by a registration, which keeps Nomad's
// (sending none), so `nomad status` named them as differing after every registration; and
// parameters that differ, which Nomad refuses to update, were "Would update", the
// registration then refused.
func TestNomadRegisterDryRunSaysWhatNomadWouldDo(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	// code: the exit code the dry run must end with (4: the registration would not go through).
	dryRun := func(id string, code int) string {
		t.Helper()
		ios, _, out, _ := iostreams.Test()
		if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{id}, DryRun: true}); ExitCode(err) != code {
			t.Fatalf("register --dry-run %s: %v (exit %d), want exit %d", id, err, ExitCode(err), code)
		}
		return out.String()
	}
	n.mu.Lock()
	n.readBack = func(v map[string]any) {
		v["Parameters"] = map[string]string{"type": "gp3"}
		if v["ID"] == "db" {
			v["Context"] = map[string]string{"node_attach_driver": "nfs"}
		}
	}
	n.mu.Unlock()
	if out := dryRun("db", ExitOK); !strings.Contains(out, "nothing would change") {
		t.Errorf("register --dry-run of a volume whose copy in Nomad has parameters and a context volctl's lacks: %q, want nothing to change (Nomad keeps its own)", out)
	}
	if st, _, notes := runNomadStatusOf(t, h, n); st[0]["differs"] != nil || notes != "" {
		t.Errorf("status of a volume whose copy in Nomad has parameters and a context volctl's lacks: differs %v, notes %q; want none", st[0]["differs"], notes)
	}
	// A volume whose parameters differ from those of its copy in Nomad: refused, not updated.
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "pv", Name: "pv", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Parameters:   map[string]string{"type": "io2"}}); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"pv"}}); err != nil {
		t.Fatal(err)
	}
	out := dryRun("pv", ExitConflict)
	for _, want := range []string{"Nomad does not change a registered volume's parameters", "it would be refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("register --dry-run of a volume whose parameters differ from Nomad's copy's: %q\nwant it to say %q", out, want)
		}
	}
	if strings.Contains(out, "Would update") {
		t.Errorf("register --dry-run of a volume whose parameters differ from Nomad's copy's: %q\nsays Nomad would update them, which it refuses", out)
	}
}

// Looking never writes: `volctl nomad status`, `volctl nomad register --dry-run` and a
// release Nomad refuses read the volume and send Nomad nothing else (a write would go through
// its plugin's validation and the volume's Raft log, and is no one's to send but a
// registration's). Nomad's answer to a read is a copy, so the reads leave its volume as it is
// (nomad.TestHandOverSendsTheSecretsOnce).
func TestNomadLookingNeverWrites(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t) // any request but a read or a registration fails the test
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	runNomadStatusOf(t, h, n)
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := runNomadRelease(h, n.client, nil); err == nil {
		t.Fatal("release while Nomad has the volume: taken back")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.puts) != 1 {
		t.Errorf("Nomad got %d registrations, want 1, the handover's: status, --dry-run and release wrote", len(n.puts))
	}
}

// Nomad answers no secrets and a volume's mount flags as one "[REDACTED]": `volctl nomad
// status` cannot compare volctl's with Nomad's copy's, and said nothing of them, so a volume
// whose secrets Nomad lost (its event stream before 1.11.1 redacts them: GH-27176) showed no
// difference. It now says, per volume, that they are not compared and what sends them again.
func TestNomadStatusSaysWhatItDidNotCompare(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "sec", Name: "sec", Type: "csi", PluginID: "hp", CapacityMin: 10 << 20,
		Secrets: spec.Secrets{"token": "s3cret"}, MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	ios, _, _, _ := iostreams.Test()
	for _, id := range []string{"db", "sec"} {
		if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{id}}); err != nil {
			t.Fatal(err)
		}
	}
	ios, _, out, _ := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Exporter: exportFlags{JSON: true}}); err != nil {
		t.Fatal(err)
	}
	var st []NomadVolumeStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || len(st) != 2 {
		t.Fatalf("nomad status --json: %v\n%s", err, out)
	}
	for _, s := range st {
		want := map[string]string{"db": "", "sec": "secrets mount_flags"}[s.ID]
		if got := strings.Join(s.NotCompared, " "); got != want || len(s.Differs) != 0 {
			t.Errorf("status of %s: not_compared %q, differs %q; want not_compared %q and no difference", s.ID, got, s.Differs, want)
		}
	}
	ios, _, _, errOut := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client}); err != nil {
		t.Fatal(err)
	}
	if notes := errOut.String(); !strings.Contains(notes, `volume "sec": Nomad does not answer a volume's secrets or mount flags`) ||
		!strings.Contains(notes, "volctl nomad register sec") || strings.Contains(notes, `volume "db"`) || strings.Contains(notes, "s3cret") {
		t.Errorf("status notes:\n%s\nwant one for sec alone, naming what was not compared and the registration that sends them", notes)
	}
}

// A volume Nomad has without a topology — registered there before without one (`nomad volume
// register` of a file with no topology_request, another tool) — keeps none whatever a
// registration sends: Nomad takes a volume's topology from its first registration only
// (CSIVolume.Merge drops an update's when the volume has none), and places its allocs on any
// node. `volctl nomad register --dry-run` and `volctl nomad status` name it, and the
// registration's read-back fails naming the deregistration that lets one give it a topology.
// Before: "nothing would change", no difference, and "Registered", Nomad's copy still without
// one.
func TestNomadTopologyNomadKeepsIsNamed(t *testing.T) {
	h := nomadHarness(t)
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil || len(info.AccessibleTopology) == 0 {
		t.Fatalf("volume db: %+v, %v; want one with a topology", info.AccessibleTopology, err)
	}
	n := newFakeNomad(t)
	n.mu.Lock()
	n.vols["default/db"] = true
	n.sent["default/db"] = map[string]any{"ID": "db", "Name": "db", "PluginID": "hp", "ExternalID": info.ExternalID,
		"RequestedCapabilities": []map[string]string{{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}},
		"MountOptions":          map[string]any{}, "RequestedCapacityMin": info.CapacityBytes}
	n.mu.Unlock()
	ios, _, out, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true}); ExitCode(err) != ExitConflict {
		t.Fatalf("register --dry-run of a volume Nomad has without its topology: %v (exit %d), want exit 4: the registration's read-back would fail", err, ExitCode(err))
	}
	if !strings.Contains(out.String(), "Nomad's copy has no topology") {
		t.Errorf("register --dry-run of a volume Nomad has without its topology: %q\nwant it to say Nomad's copy has none, and would keep none", out)
	}
	if st, _, notes := runNomadStatusOf(t, h, n); !slices.Contains(anyStrings(st[0]["differs"]), "topology") || !strings.Contains(notes, "topology") {
		t.Errorf("status of a volume Nomad has without its topology: differs %v, notes %q; want topology named", st[0]["differs"], notes)
	}
	_, _, err = registerIn(h, n)
	if err == nil || !strings.Contains(err.Error(), "topologies none") || !strings.Contains(err.Error(), "nomad volume deregister -namespace default db") {
		t.Fatalf("register of a volume Nomad has without its topology: %v; want it to fail naming the topology and the deregistration", err)
	}
	if !handedOver(t, h) {
		t.Fatal("a registration Nomad answered OK left no handover mark")
	}
	// Deregistered in Nomad, registered again: Nomad takes the topology sent.
	n.mu.Lock()
	delete(n.vols, "default/db")
	n.mu.Unlock()
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatalf("register again once Nomad deregistered it: %v", err)
	}
	if st, _, _ := runNomadStatusOf(t, h, n); st[0]["differs"] != nil {
		t.Errorf("status once registered anew: differs %v, want none", st[0]["differs"])
	}
}

// anyStrings is a JSON array of strings as decoded into an any, as strings.
func anyStrings(v any) []string {
	var out []string
	a, _ := v.([]any)
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// A Nomad whose servers run a version before 1.11.1 (1.10.7 and 1.8.19 Enterprise) erases a
// volume's secrets and mount flags from its copy each time it sends the volume's event to an
// event-stream subscriber (hashicorp/nomad#27176): `volctl nomad register` and its --dry-run
// warn, naming the servers and their versions, for a volume with secrets or mount flags; not
// for one without, nor on a fixed Nomad, nor when Nomad does not say (a token without node
// read: TestNomadRegisterWithoutNodeReadSaysItCouldNotCheck). Before: nothing said so, and
// Nomad sent the plugin a volume without its secrets.
func TestNomadRegisterWarnsOfANomadThatErasesSecrets(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "sec", Name: "sec", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets:      spec.Secrets{"token": "s3cret"}}); err != nil {
		t.Fatal(err)
	}
	register := func(n *fakeNomad, id string, dryRun bool) string {
		t.Helper()
		ios, _, _, errOut := iostreams.Test()
		if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{id}, DryRun: dryRun}); err != nil {
			t.Fatalf("nomad register %s (dry run %v): %v", id, dryRun, err)
		}
		return errOut.String()
	}
	old := newFakeNomad(t)
	old.builds = []string{"1.11.1", "1.10.5"}
	for _, dryRun := range []bool{true, false} {
		warned := register(old, "sec", dryRun)
		for _, want := range []string{`volume "sec" has secrets`, "s2.global (1.10.5)", "hashicorp/nomad#27176", "stop such subscribers or upgrade"} {
			if !strings.Contains(warned, want) {
				t.Errorf("register of a volume with secrets on a Nomad with a server of 1.10.5 (dry run %v) warned %q\nwant it to say %q", dryRun, warned, want)
			}
		}
		if strings.Contains(warned, "s1.global") {
			t.Errorf("the warning names server s1, of 1.11.1, which keeps the secrets: %q", warned)
		}
	}
	if warned := register(old, "db", false); strings.Contains(warned, "27176") {
		t.Errorf("register of a volume without secrets or mount flags warned: %q", warned)
	}
	for _, builds := range [][]string{{"1.11.1"}, {"1.10.7+ent"}, {"2.0.0"}} {
		n := newFakeNomad(t)
		n.builds = builds
		h2 := nomadHarness(t)
		if _, err := h2.e.CreateVolume(h2.ctx, spec.Volume{ID: "sec", Name: "sec", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
			Secrets:      spec.Secrets{"token": "s3cret"}}); err != nil {
			t.Fatal(err)
		}
		ios, _, _, errOut := iostreams.Test()
		if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h2.engine, Nomad: n.client, Volumes: []string{"sec"}}); err != nil {
			t.Fatalf("register on a Nomad of %v: %v", builds, err)
		}
		if strings.Contains(errOut.String(), "27176") {
			t.Errorf("register on a Nomad of %v warned: %q", builds, errOut)
		}
	}
}

// nomad status warns, as register does, of a volume with secrets registered in a Nomad whose
// servers erase them at each event-stream event of the volume; not of one without, nor when
// every server keeps them.
func TestNomadStatusWarnsOfANomadThatErasesSecrets(t *testing.T) {
	for _, builds := range [][]string{{"1.11.1", "1.10.5"}, {"1.11.1"}} {
		h := nomadHarness(t)
		if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "sec", Name: "sec", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
			Secrets:      spec.Secrets{"token": "s3cret"}}); err != nil {
			t.Fatal(err)
		}
		n := newFakeNomad(t)
		n.builds = builds
		ios, _, _, _ := iostreams.Test()
		for _, id := range []string{"sec", "db"} {
			if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{id}}); err != nil {
				t.Fatalf("nomad register %s: %v", id, err)
			}
		}
		ios, _, out, errOut := iostreams.Test()
		if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"sec", "db"}}); err != nil {
			t.Fatalf("nomad status on a Nomad of %v: %v", builds, err)
		}
		erases := slices.Contains(builds, "1.10.5")
		warned := errOut.String()
		for _, want := range []string{`Warning: volume "sec" has secrets`, "s2.global (1.10.5)", "hashicorp/nomad#27176", "`volctl nomad register sec` again"} {
			if erases != strings.Contains(warned, want) {
				t.Errorf("nomad status on a Nomad of %v said %q\nsaying %q: %v, want %v", builds, warned, want, !erases, erases)
			}
		}
		if strings.Contains(warned, `volume "db" has`) {
			t.Errorf("nomad status warned of db, which has no secrets or mount flags: %q", warned)
		}
		ios, _, out, _ = iostreams.Test()
		if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"sec"},
			Exporter: exportFlags{JSON: true}}); err != nil {
			t.Fatal(err)
		}
		var got []map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 1 {
			t.Fatalf("nomad status --json: %v\n%s", err, out)
		}
		e, _ := got[0]["erasing"].(string)
		if (e != "") != erases || erases && !strings.Contains(e, "s2.global (1.10.5)") {
			t.Errorf("nomad status --json on a Nomad of %v: erasing %q, want it set %v, naming the server", builds, e, erases)
		}
	}
}

// A token without node read (a policy that writes volumes and reads plugins, as a handover
// needs, and nothing more): Nomad refuses /v1/agent/members, so volctl cannot tell whether its
// servers erase a volume's secrets at each event-stream event (before 1.11.1). register, its
// --dry-run and status say so once per command, for a volume with secrets, naming the rule
// and `nomad server members`; they warn of nothing they could not see. Before: nothing, as
// on a fixed Nomad, and a volume handed to an old one lost its secrets unannounced.
func TestNomadRegisterWithoutNodeReadSaysItCouldNotCheck(t *testing.T) {
	h := nomadHarness(t)
	for _, id := range []string{"sec", "sec2"} {
		if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
			Secrets:      spec.Secrets{"token": "s3cret"}}); err != nil {
			t.Fatal(err)
		}
	}
	n := newFakeNomad(t)
	n.builds = []string{"403"}
	check := func(what, errOut string) {
		t.Helper()
		for _, want := range []string{`Note: volume "sec" has secrets`, "hashicorp/nomad#27176", `"node" policy "read"`, "`nomad server members`"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s with a token without node read: %q\nwant it to say %q", what, errOut, want)
			}
		}
		if strings.Count(errOut, "27176") != 1 || strings.Contains(errOut, "Warning") {
			t.Errorf("%s with a token without node read: %q\nwant one note, no warning", what, errOut)
		}
	}
	for _, dryRun := range []bool{true, false} {
		ios, _, _, errOut := iostreams.Test()
		if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"sec", "sec2"}, DryRun: dryRun}); err != nil {
			t.Fatalf("nomad register (dry run %v): %v", dryRun, err)
		}
		check(fmt.Sprintf("register (dry run %v)", dryRun), errOut.String())
	}
	ios, _, _, errOut := iostreams.Test()
	if err := nomadStatusRun(context.Background(), &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"sec", "sec2"}}); err != nil {
		t.Fatalf("nomad status: %v", err)
	}
	check("status", errOut.String())
}
