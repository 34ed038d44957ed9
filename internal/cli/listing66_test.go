package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// secretNamedVolumes makes two volumes whose ID and name hold their own secret (a
// value of 3 bytes or more: docs/specs.md says it "masks that name everywhere, the volume
// listed as [REDACTED]"), and checks that `volume status ID` does mask it.
func secretNamedVolumes(t *testing.T, secret string) *cliHarness {
	t.Helper()
	h := newCLIHarness(t)
	for _, id := range []string{secret + "-a", secret + "-b"} {
		if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: id, Name: "n-" + id, Type: "csi", PluginID: "mem",
			Secrets:      spec.Secrets{"token": secret},
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := h.runReported("volume", "status", secret+"-a")
	if code != 0 || strings.Contains(out+errOut, secret) || !strings.Contains(out, "[REDACTED]-a") {
		t.Fatalf("volume status ID (exit %d) should show the ID masked, as the docs promise (the reference this test holds the lists to):\n%s%s", code, out, errOut)
	}
	return h
}

// `volume status ID` masks a secret the volume's ID and name hold ("[REDACTED]-a"), as
// docs/specs.md promises ("masks that name everywhere, the volume listed as [REDACTED]") and
// docs/json.md ("Secrets ... never appear"). The list of the same volumes (`volume status`,
// `volume list`, in every form: the table, --json, --jq, -t) and the array an ambiguous prefix
// prints are never passed through redactOutput (volumeStatusRun, writeVolumeList,
// writeVolumeListJSON): they print the secret whole, beside the detail that masks it. Found by
// helper review66.
func TestVolumeListMasksASecretInTheVolumesNames(t *testing.T) {
	const secret = "lst66-s3cretword"
	h := secretNamedVolumes(t, secret)
	for _, args := range [][]string{
		{"volume", "status"},
		{"volume", "list"},
		{"volume", "status", "--json"},
		{"volume", "status", "--jq", ".[].id"},
		{"volume", "status", "-t", `{{range .}}{{.id}} {{.name}}{{"\n"}}{{end}}`},
		{"volume", "status", "lst66"},           // an ambiguous prefix prints the matches (exit 2)
		{"volume", "status", "lst66", "--json"}, // as their array
	} {
		code, out, errOut := h.runReported(args...)
		if strings.Contains(out+errOut, secret) {
			t.Errorf("volctl %s (exit %d) prints the secret the volume's ID and name hold, which `volume status ID` masks:\n%s%s",
				strings.Join(args, " "), code, out, errOut)
		}
	}
}

// `volctl status` scrubs its summary (redactOutput(&sum)) but prints the volume table from
// vols, read apart and never scrubbed: the secret in the volume's ID and name is printed whole,
// where `volume status ID` masks it. Found by helper review66.
func TestStatusTextMasksASecretInTheVolumeTable(t *testing.T) {
	const secret = "st66-s3cretword"
	h := secretNamedVolumes(t, secret)
	code, out, errOut := h.runReported("status")
	if code != 0 || !strings.Contains(out, "Volumes: 2") {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, secret) {
		t.Errorf("volctl status prints the secret the volume's ID and name hold, which `volume status ID` masks:\n%s%s", out, errOut)
	}
}

// A prefix matching several volumes prints "their summaries (the array form)" (docs/json.md),
// whose `schedulable` is documented to be false for a volume outside its plugin's topology
// (and one handed over to Nomad). resolveVolume builds those summaries with volumeSummary,
// which looks at the plugin's recorded health only: two volumes the list says "no: outside
// its topology" of are printed by `volume status PREFIX` as schedulable, "yes". Found by helper
// review66.
func TestAmbiguousPrefixSaysWhatTheListSaysOfSchedulable(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
	cfg.CreateTopology = &spec.Topology{Segments: map[string]string{"zone": "b"}} // made where the node is not
	_, e, _ := serveMem(t, csitest.NewMemPlugin(cfg))
	createSingleWriter(t, e, "far-1", "far-2")
	h := &cliHarness{ctx: t.Context(), state: e.StateDir(), e: e}

	schedulable := func(args ...string) map[string]bool {
		t.Helper()
		code, out, errOut := h.runReported(args...)
		var vols []struct {
			ID          string `json:"id"`
			Schedulable bool   `json:"schedulable"`
		}
		if err := json.Unmarshal([]byte(out), &vols); err != nil || len(vols) != 2 {
			t.Fatalf("volctl %s: exit %d, %v\n%s%s", strings.Join(args, " "), code, err, out, errOut)
		}
		got := map[string]bool{}
		for _, v := range vols {
			got[v.ID] = v.Schedulable
		}
		return got
	}
	list := schedulable("volume", "status", "--json")
	if list["far-1"] || list["far-2"] {
		t.Fatalf("volume status --json says a volume outside its topology is schedulable: %v (the test tests nothing)", list)
	}
	if amb := schedulable("volume", "status", "far", "--json"); amb["far-1"] || amb["far-2"] {
		t.Errorf("volume status far --json (an ambiguous prefix) says schedulable %v of the volumes `volume status --json` says %v of: "+
			"their summaries should be the list's", amb, list)
	}
	_, out, errOut := h.runReported("volume", "status", "far")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "far-") && !strings.Contains(line, "no: outside its topology") {
			t.Errorf("volume status far (an ambiguous prefix) lists %q; the list says \"no: outside its topology\":\n%s%s", line, out, errOut)
		}
	}
}
