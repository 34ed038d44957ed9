package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
)

// `volctl nomad status` named the fields in which Nomad's copy of a volume differs from
// volctl's (differs: capacity, capabilities, mount_options) but not what either has, so a
// user had to read Nomad's copy and volctl's record side by side to tell a capacity grown in
// Nomad from one shrunk, or which access mode Nomad's copy took away. Each difference now
// carries both sides (differences[].nomad, .volctl), and the note under the table says them.
func TestNomadStatusSaysWhatDiffersFieldByField(t *testing.T) {
	h, n := handedOverThenEdited(t, func(v map[string]any) {
		v["RequestedCapacityMin"], v["RequestedCapacityMax"] = 1<<30, 2<<30
		v["RequestedCapabilities"] = []map[string]string{{"AccessMode": "multi-node-reader-only", "AttachmentMode": "file-system"}}
		v["MountOptions"] = map[string]any{"FSType": "xfs", "MountFlags": []string{"noatime"}}
	})
	st, _, notes := runNomadStatusOf(t, h, n)
	want := map[string][2]string{
		"capabilities":  {`["multi-node-reader-only"/"file-system"]`, `["single-node-writer"/"file-system"]`},
		"mount_options": {`fs_type "xfs", mount flags`, `fs_type "", no mount flags`},
		"capacity":      {"min 1GiB, max 2GiB", "min 10MiB, max none"},
	}
	got := map[string][2]string{}
	ds, _ := st[0]["differences"].([]any)
	for _, d := range ds {
		m, _ := d.(map[string]any)
		f, _ := m["field"].(string)
		nv, _ := m["nomad"].(string)
		vv, _ := m["volctl"].(string)
		got[f] = [2]string{nv, vv}
	}
	if len(got) != len(want) {
		t.Errorf("status --json: differences = %v; want one for each of capabilities, mount_options, capacity, with Nomad's and volctl's values", st[0]["differences"])
	}
	for f, w := range want {
		if got[f] != w {
			t.Errorf("status --json: the difference in %s is %q; want Nomad's %q and volctl's %q", f, got[f], w[0], w[1])
		}
		if line := f + ": Nomad's " + w[0] + "; volctl's " + w[1]; !strings.Contains(notes, line) {
			t.Errorf("status notes: %q\nwant %q", notes, line)
		}
	}
}

// `volctl nomad register --dry-run` named the fields an update would change, or Nomad would
// refuse to change, without what Nomad's copy and volctl's have: its plan now says both, in
// its lines and in its JSON (differences), a secret volctl knows replaced in either.
func TestNomadRegisterDryRunSaysWhatDiffersFieldByField(t *testing.T) {
	h, n := handedOverThenEdited(t, func(v map[string]any) {
		v["RequestedCapacityMin"] = 1 << 30
		v["Name"] = "other-name"
	})
	var plans []struct {
		Differences []nomad.Difference `json:"differences"`
	}
	for _, asJSON := range []bool{false, true} {
		ios, _, out, _ := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true,
			Exporter: exportFlags{JSON: asJSON}})
		if ExitCode(err) != ExitConflict {
			t.Fatalf("register --dry-run of a volume whose name Nomad's copy has otherwise: %v (exit %d), want exit %d", err, ExitCode(err), ExitConflict)
		}
		if asJSON {
			if err := json.Unmarshal(out.Bytes(), &plans); err != nil || len(plans) != 1 {
				t.Fatalf("register --dry-run --json: %v\n%s", err, out)
			}
			continue
		}
		for _, line := range []string{`  capacity: Nomad's min 1GiB, max none; volctl's min 10MiB, max none`, `  name: Nomad's "other-name"; volctl's "db"`} {
			if !strings.Contains(out.String(), line+"\n") {
				t.Errorf("register --dry-run: %q\nwant the line %q", out, line)
			}
		}
	}
	want := []nomad.Difference{{Field: "capacity", Nomad: "min 1GiB, max none", Volctl: "min 10MiB, max none"}, {Field: "name", Nomad: `"other-name"`, Volctl: `"db"`}}
	if !slices.Equal(plans[0].Differences, want) {
		t.Errorf("register --dry-run --json: differences %+v, want %+v", plans[0].Differences, want)
	}
}

// What Nomad's copy has is what Nomad, or what answers for it, says: a name or a context that
// echoes the ACL token is shown in the differences with the token replaced, in the plan's
// lines and JSON and in nomad status's note and JSON.
func TestNomadDifferencesDoNotShowTheToken(t *testing.T) {
	const token = "5d2f-acl-token-secret"
	t.Setenv("NOMAD_TOKEN", token)
	h, n := handedOverThenEdited(t, func(v map[string]any) {
		v["Name"] = "by " + token
		v["Context"] = map[string]string{"who": token}
		v["RequestedCapacityMin"] = 1 << 30
	})
	var shown strings.Builder
	for _, asJSON := range []bool{false, true} {
		ios, _, out, errOut := iostreams.Test()
		err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true,
			Exporter: exportFlags{JSON: asJSON}})
		if ExitCode(err) != ExitConflict {
			t.Fatalf("register --dry-run: %v", err)
		}
		shown.WriteString(out.String() + errOut.String() + err.Error())
	}
	st, table, notes := runNomadStatusOf(t, h, n)
	b, _ := json.Marshal(st)
	shown.WriteString(string(b) + table + notes)
	if !strings.Contains(shown.String(), `name: Nomad's "by `) {
		t.Fatalf("the differences are not shown: %s", shown.String())
	}
	if strings.Contains(shown.String(), token) {
		t.Errorf("the ACL token Nomad's copy echoes is shown: %s", shown.String())
	}
}

// Nomad expands a registered volume through its plugin when `nomad volume register` asks a
// larger capacity_min, and keeps that capacity whatever volctl's registration asks after: the
// storage is that large, volctl's record of it behind. nomad status said nothing differs (it
// compared the requested capacities only, which volctl's registration sets back); it now
// names capacity_bytes, with Nomad's capacity and volctl's.
func TestNomadStatusSaysNomadGrewTheVolume(t *testing.T) {
	h, n := handedOverThenEdited(t, func(v map[string]any) { v["Capacity"] = 20 << 20 })
	st, _, notes := runNomadStatusOf(t, h, n)
	if d := anyStrings(st[0]["differs"]); !slices.Equal(d, []string{"capacity_bytes"}) {
		t.Errorf("status of a volume Nomad has at 20MiB, volctl at 10MiB: differs %v, want [capacity_bytes]", d)
	}
	if want := "capacity_bytes: Nomad's 20MiB; volctl's 10MiB"; !strings.Contains(notes, want) {
		t.Errorf("status notes: %q\nwant %q", notes, want)
	}
}

// handedOverThenEdited hands volume db of a harness over to a fake Nomad, which then answers
// every read of it as edit makes it: Nomad's copy edited there since.
func handedOverThenEdited(t *testing.T, edit func(v map[string]any)) (*cliHarness, *fakeNomad) {
	t.Helper()
	h := nomadHarness(t)
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.readBack = edit
	n.mu.Unlock()
	return h, n
}

// nomad status names (differs) and register --dry-run words (differences) one list of the
// fields Nomad's copy has otherwise, made in one place (nomad.Differing): a field one of them
// compares, the other does too, in the same order.
func TestNomadStatusAndPlanNameTheSameDifferences(t *testing.T) {
	h, n := handedOverThenEdited(t, func(v map[string]any) {
		v["RequestedCapacityMin"] = 1 << 30 // changed: capacity
		v["Name"] = "other-name"            // refused: name
		v["Capacity"] = 1 << 30             // sized: capacity_bytes
	})
	st, _, _ := runNomadStatusOf(t, h, n)
	differs := anyStrings(st[0]["differs"])
	ios, _, out, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true,
		Exporter: exportFlags{JSON: true}})
	if ExitCode(err) != ExitConflict {
		t.Fatalf("register --dry-run of a volume whose name Nomad's copy has otherwise: %v (exit %d), want exit %d", err, ExitCode(err), ExitConflict)
	}
	var plans []struct {
		Differences []nomad.Difference `json:"differences"`
	}
	if err := json.Unmarshal(out.Bytes(), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("register --dry-run --json: %v\n%s", err, out)
	}
	var planned []string
	for _, d := range plans[0].Differences {
		planned = append(planned, d.Field)
	}
	if want := []string{"capacity", "name", "capacity_bytes"}; !slices.Equal(differs, want) || !slices.Equal(planned, want) {
		t.Errorf("nomad status differs %v, register --dry-run differences %v; want both %v", differs, planned, want)
	}
}

// Nomad refuses an update whose capacity_max is below the capacity its copy has
// ("max requested capacity ... less than or equal to current"), which it has once it grew the
// volume past the capacity_max volctl created it with. --dry-run said "Would update" and
// exited 0; it now says the registration would be refused, with both sizes, and exits 4, and
// nomad status names capacity_max among the differences.
func TestNomadRegisterDryRunSaysAMaxBelowNomadsCapacityIsRefused(t *testing.T) {
	h, n, out, err := dryRunOfAMaxBelowNomadsCapacity(t)
	if ExitCode(err) != ExitConflict {
		t.Errorf("register --dry-run of a capacity_max below Nomad's capacity: %v (exit %d), want exit %d\n%s", err, ExitCode(err), ExitConflict, out)
	}
	for _, want := range []string{"capacity_max: Nomad's capacity 20MiB; volctl's max 15MiB", "above volctl's capacity_max of 15MiB", "it would be refused"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("register --dry-run: %q\nwant it to say %q", out, want)
		}
	}
	st, _, _ := runNomadStatusOf(t, h, n)
	if d := anyStrings(st[0]["differs"]); !slices.Contains(d, "capacity_max") {
		t.Errorf("nomad status: differs %v, want capacity_max among them", d)
	}
}

// dryRunOfAMaxBelowNomadsCapacity registers volume db (capacity_max 15MiB) in a fake Nomad
// that has grown its copy to 20MiB, and runs nomad register --dry-run of it; it returns the
// harness, the fake Nomad, the dry run's stdout and its error.
func dryRunOfAMaxBelowNomadsCapacity(t *testing.T) (*cliHarness, *fakeNomad, *bytes.Buffer, error) {
	t.Helper()
	h := nomadHarness(t)
	if _, err := h.e.ExpandVolume(h.ctx, "db", 10<<20, 15<<20); err != nil { // capacity_max 15MiB
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.readBack = func(v map[string]any) {
		v["Capacity"], v["RequestedCapacityMin"], v["RequestedCapacityMax"] = 20<<20, 20<<20, 30<<20
	}
	n.mu.Unlock()
	ios, _, out, _ := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}, DryRun: true})
	return h, n, out, err
}

// Nomad's refusal of an update whose capacity_max is below its copy's capacity said Nomad's
// words alone ("max requested capacity (16 MB) less than or equal to current (21 MB)", as
// Nomad 2.0.5 answers): the error now says that Nomad grew the volume past volctl's
// capacity_max, and what works.
func TestNomadRefusalOfAMaxBelowItsCapacitySaysWhatWorks(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.ExpandVolume(h.ctx, "db", 10<<20, 15<<20); err != nil {
		t.Fatal(err)
	}
	n := newFakeNomad(t)
	if _, _, err := registerIn(h, n); err != nil {
		t.Fatal(err)
	}
	n.setOnPut(func(http.ResponseWriter, *http.Request) (int, string) {
		return http.StatusInternalServerError, "unable to update volume: max requested capacity (16 MB) less than or equal to current (21 MB)"
	})
	_, _, err := registerIn(h, n)
	if err == nil {
		t.Fatal("register: no error")
	}
	for _, want := range []string{"max requested capacity", "grown, in Nomad, past volctl's capacity_max of 15MiB", "`volctl nomad release db` records the size its plugin lists"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("register: %v\nwant it to say %q", err, want)
		}
	}
}
